import { z } from 'zod';

/**
 * An absolute http or https URL. Hosts such as `localhost` and IP literals are allowed here on
 * purpose: whether a private address may be reached is a policy of the caller (the SSRF guard),
 * not a property of the message.
 */
export function httpUrl(message: string) {
  return z.url({ protocol: /^https?$/, error: message });
}

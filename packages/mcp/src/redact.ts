/** Placeholder for a secret removed from a message. */
export const SCRUBBED = '[redacted]';

/**
 * The server URL as it may be shown to a user or written to a log: scheme, host, port and path.
 * Userinfo, query and fragment are dropped, because that is where credentials hide in URLs
 * (`?api_key=...`, `https://user:token@host`).
 */
export function displayUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The secrets a server configuration carries: the api key and every custom header value (a
 * custom header is as likely to be `X-Api-Key` as anything else). Short values are skipped:
 * scrubbing `1` from a message would garble it and protect nothing.
 */
export function secretsOf(config: {
  api_key?: string | undefined;
  headers?: Record<string, string> | undefined;
}): string[] {
  const values = [config.api_key, ...Object.values(config.headers ?? {})];
  return values.filter((v): v is string => typeof v === 'string' && v.length >= 4);
}

/**
 * Removes every occurrence of the given secrets from a text (a server's error message may echo
 * the credentials it was sent), also in their `Bearer`-less, URL-encoded and base64 forms.
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    for (const form of new Set([
      secret,
      encodeURIComponent(secret),
      Buffer.from(secret).toString('base64'),
    ])) {
      result = result.split(form).join(SCRUBBED);
    }
  }
  return result;
}

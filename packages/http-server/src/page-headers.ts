import { createHash } from 'node:crypto';

/**
 * The Content-Security-Policy every page of the service starts from: everything from the service
 * itself and nothing from elsewhere, no inline script or style, no plugins, images also as
 * `data:` URLs, and no page framed by any other (clickjacking). A page loosens one directive only
 * where it needs to, by naming it in {@link pageHeaders}.
 */
const BASE_POLICY: Readonly<Record<string, string>> = {
  'default-src': "'self'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self' data:",
  'connect-src': "'self'",
  'object-src': "'none'",
  'frame-ancestors': "'none'",
  'base-uri': "'self'",
  'form-action': "'self'",
};

/**
 * The security headers of an HTML page the service serves (the playground, `/docs`, the queue
 * dashboard): its Content-Security-Policy ({@link BASE_POLICY} with `directives` replacing or
 * adding directives), `X-Frame-Options: DENY` for browsers that ignore `frame-ancestors`,
 * `nosniff`, and no referrer.
 */
export function pageHeaders(
  directives: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const policy = { ...BASE_POLICY, ...directives };
  return {
    'content-security-policy': Object.entries(policy)
      .map(([name, value]) => `${name} ${value}`)
      .join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** A CSP source that allows exactly this inline script, stylesheet or style attribute. */
export function inlineSourceHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

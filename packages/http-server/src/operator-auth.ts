import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { AppError } from './errors.js';
import { authHook, type RouteAuth } from './route-auth.js';

/**
 * How an operator credential may be presented: `bearer` (`Authorization: Bearer <token>`), or
 * `bearer-or-basic`, which also takes HTTP Basic with any user name and the token as password,
 * so a browser can open the page (it asks for the credential after a `WWW-Authenticate: Basic`).
 */
export type OperatorScheme = 'bearer' | 'bearer-or-basic';

/**
 * Which operator credential: `ADMIN_TOKEN` (`admin`), `METRICS_TOKEN` (`metrics`) or
 * `AUTH_SERVICE_TOKEN` (`service`).
 */
export type OperatorCredential = Extract<RouteAuth, 'admin' | 'metrics' | 'service'>;

/**
 * A check of an operator credential (`METRICS_TOKEN`, `ADMIN_TOKEN`), not a user's: it compares
 * the presented secret with `token` in constant time (both hashed first, so neither the content
 * nor the length leaks through timing), and throws a 401 `unauthorized` with the matching
 * `WWW-Authenticate` challenge otherwise. A user's access token is just a wrong secret here.
 * A route's (or a mount's) hook, listed with the auth `credential`.
 */
export function operatorCredential(
  credential: OperatorCredential,
  token: string,
  scheme: OperatorScheme,
  realm: string,
): ((request: Request) => void) & { readonly auth: OperatorCredential } {
  const expected = digest(token);
  const challenge = scheme === 'bearer' ? `Bearer realm="${realm}"` : `Basic realm="${realm}"`;
  const check = (request: Request): void => {
    const presented = secretOf(request.headers.authorization, scheme);
    if (presented !== undefined && timingSafeEqual(digest(presented), expected)) return;
    throw new AppError('unauthorized', 'a valid operator credential is required', undefined, {
      'www-authenticate': challenge,
    });
  };
  return authHook(credential, check);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The secret of an `Authorization` header in one of the accepted schemes. */
function secretOf(header: string | undefined, scheme: OperatorScheme): string | undefined {
  if (!header) return undefined;
  const space = header.indexOf(' ');
  if (space === -1) return undefined;
  const kind = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (kind === 'bearer') return value;
  if (kind !== 'basic' || scheme !== 'bearer-or-basic') return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

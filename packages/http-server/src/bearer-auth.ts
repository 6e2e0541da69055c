import type { Request } from 'express';
import { AppError } from './errors.js';
import { authHook, type BearerHook } from './route-auth.js';

/** Verifies an access token and returns its user; throws with a safe message when it is not valid. */
export type VerifyAccessToken = (token: string) => Promise<{ userId: string; iat?: number }>;

/**
 * A route hook (`preHandler` or `onRequest`, listed as auth `bearer`) that requires
 * `Authorization: Bearer <access token>` and sets `request.userId` from the verified token. Every
 * failure is 401 `unauthorized` with a `WWW-Authenticate` header (RFC 6750) and a message that
 * says what was wrong without echoing the token.
 */
export function bearerAuth(verify: VerifyAccessToken): BearerHook {
  const requireUser = async (request: Request): Promise<void> => {
    const header = request.headers.authorization;
    if (!header) throw unauthorized('missing Authorization header', 'invalid_request');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1])
      throw unauthorized('Authorization header must be "Bearer <access token>"', 'invalid_request');
    try {
      const { userId } = await verify(match[1]);
      request.userId = userId;
    } catch (error) {
      throw unauthorized((error as Error).message, 'invalid_token');
    }
  };
  return authHook('bearer', requireUser);
}

function unauthorized(message: string, reason: 'invalid_request' | 'invalid_token'): AppError {
  return new AppError('unauthorized', message, undefined, {
    'www-authenticate': `Bearer error="${reason}"`,
  });
}

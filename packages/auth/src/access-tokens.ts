import jwt from 'jsonwebtoken';
import { ALGORITHM, type KeyPair } from './keys.js';

/** Access-token lifetime (spec 4.1, 8): one hour. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;

/** Leeway for the clocks of the signer and this process. */
const CLOCK_TOLERANCE_SECONDS = 5;

/** Why a token was refused; the message is safe to return to the client. */
export class InvalidTokenError extends Error {
  constructor(
    readonly reason:
      'malformed' | 'expired' | 'bad_signature' | 'bad_algorithm' | 'bad_claims' | 'revoked',
    message: string,
  ) {
    super(message);
    this.name = 'InvalidTokenError';
  }
}

export interface VerifiedToken {
  userId: string;
  /** Expiry, epoch seconds. */
  exp: number;
  /** Issue time, epoch seconds, when the token says (revocation compares it with a cutoff). */
  iat?: number;
}

/** Signs an RS256 access token whose `sub` is the user id, valid for one hour. */
export async function signAccessToken(
  keys: KeyPair,
  userId: string,
  now = Date.now(),
): Promise<{ accessToken: string; expiresIn: typeof ACCESS_TOKEN_TTL_SECONDS }> {
  if (!keys.privateKey) throw new Error('no private key: this process cannot sign tokens');
  const iat = Math.floor(now / 1000);
  const accessToken = jwt.sign(
    { sub: userId, iat, exp: iat + ACCESS_TOKEN_TTL_SECONDS },
    keys.privateKey,
    { algorithm: ALGORITHM, header: { alg: ALGORITHM, typ: 'JWT' } },
  );
  return Promise.resolve({ accessToken, expiresIn: ACCESS_TOKEN_TTL_SECONDS });
}

/**
 * Verifies an access token: the algorithm is pinned to RS256 (so `alg: none` and HS256 tokens
 * signed with the public key as an HMAC secret are refused), `exp` and `sub` are required.
 * Throws {@link InvalidTokenError}.
 */
export async function verifyAccessToken(
  keys: Pick<KeyPair, 'publicKey'>,
  token: string,
): Promise<VerifiedToken> {
  let payload: string | jwt.JwtPayload;
  try {
    payload = jwt.verify(token, keys.publicKey, {
      algorithms: [ALGORITHM],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    });
  } catch (error) {
    throw toInvalidToken(error);
  }
  if (typeof payload === 'string') throw new InvalidTokenError('malformed', 'token is malformed');
  if (typeof payload.exp !== 'number') {
    throw new InvalidTokenError('bad_claims', 'token claim "exp" is invalid or missing');
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    throw new InvalidTokenError('bad_claims', 'token has no subject');
  }
  const iat = typeof payload.iat === 'number' ? payload.iat : undefined;
  return Promise.resolve({ userId: payload.sub, exp: payload.exp, iat });
}

/** jsonwebtoken's errors (by class and message, its documented surface) as our reasons. */
function toInvalidToken(error: unknown): InvalidTokenError {
  if (error instanceof jwt.TokenExpiredError)
    return new InvalidTokenError('expired', 'token has expired');
  if (error instanceof jwt.NotBeforeError) {
    return new InvalidTokenError('bad_claims', 'token claim "nbf" is invalid or missing');
  }
  if (error instanceof jwt.JsonWebTokenError) {
    switch (error.message) {
      case 'invalid algorithm':
      case 'jwt signature is required':
        return new InvalidTokenError(
          'bad_algorithm',
          `token algorithm is not allowed (only ${ALGORITHM})`,
        );
      case 'invalid signature':
        return new InvalidTokenError('bad_signature', 'token signature is invalid');
    }
  }
  return new InvalidTokenError('malformed', 'token is malformed');
}

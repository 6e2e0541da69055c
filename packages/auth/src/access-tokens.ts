import { errors, jwtVerify, SignJWT } from 'jose';
import { ALGORITHM, type KeyPair } from './keys.js';

/** Access-token lifetime (spec 4.1, 8): one hour. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;

/** Why a token was refused; the message is safe to return to the client. */
export class InvalidTokenError extends Error {
  constructor(
    readonly reason: 'malformed' | 'expired' | 'bad_signature' | 'bad_algorithm' | 'bad_claims',
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
}

/** Signs an RS256 access token whose `sub` is the user id, valid for one hour. */
export async function signAccessToken(
  keys: KeyPair,
  userId: string,
  now = Date.now(),
): Promise<{ accessToken: string; expiresIn: typeof ACCESS_TOKEN_TTL_SECONDS }> {
  if (!keys.privateKey) throw new Error('no private key: this process cannot sign tokens');
  const iat = Math.floor(now / 1000);
  const accessToken = await new SignJWT({})
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(userId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ACCESS_TOKEN_TTL_SECONDS)
    .sign(keys.privateKey);
  return { accessToken, expiresIn: ACCESS_TOKEN_TTL_SECONDS };
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
  try {
    const { payload } = await jwtVerify(token, keys.publicKey, {
      algorithms: [ALGORITHM],
      requiredClaims: ['exp', 'sub'],
      clockTolerance: 5,
    });
    if (typeof payload.sub !== 'string' || payload.sub === '') {
      throw new InvalidTokenError('bad_claims', 'token has no subject');
    }
    return { userId: payload.sub, exp: payload.exp! };
  } catch (error) {
    throw toInvalidToken(error);
  }
}

function toInvalidToken(error: unknown): InvalidTokenError {
  if (error instanceof InvalidTokenError) return error;
  if (error instanceof errors.JWTExpired)
    return new InvalidTokenError('expired', 'token has expired');
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return new InvalidTokenError(
      'bad_algorithm',
      `token algorithm is not allowed (only ${ALGORITHM})`,
    );
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new InvalidTokenError('bad_signature', 'token signature is invalid');
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    return new InvalidTokenError(
      'bad_claims',
      `token claim "${error.claim}" is invalid or missing`,
    );
  }
  return new InvalidTokenError('malformed', 'token is malformed');
}

import type { KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { ALGORITHM, type KeyPair } from './keys.js';
import { assertUserIdAllowed, isReservedUserId } from './reserved-user-ids.js';

/** Access-token lifetime (spec 4.1, 8): one hour. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;

/**
 * `iss` and `aud` of the service's own access tokens (with `kid`): required on tokens that name
 * a key, so a token of another issuer signed with a shared key is not taken for ours.
 */
export const TOKEN_ISSUER = 'agent-backend';
export const TOKEN_AUDIENCE = 'agent-backend';

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

/**
 * Signs an RS256 access token whose `sub` is the user id, valid for one hour, with the signing
 * key's `kid`, and `iss` / `aud`, when the keys name it.
 */
export async function signAccessToken(
  keys: KeyPair,
  userId: string,
  now = Date.now(),
): Promise<{ accessToken: string; expiresIn: typeof ACCESS_TOKEN_TTL_SECONDS }> {
  if (!keys.privateKey) throw new Error('no private key: this process cannot sign tokens');
  assertUserIdAllowed(userId);
  const iat = Math.floor(now / 1000);
  // Read once: a key set's current key may change between two reads.
  const { privateKey, kid } = keys;
  const named = kid ? { iss: TOKEN_ISSUER, aud: TOKEN_AUDIENCE } : {};
  const accessToken = jwt.sign(
    { sub: userId, iat, exp: iat + ACCESS_TOKEN_TTL_SECONDS, ...named },
    privateKey,
    { algorithm: ALGORITHM, header: { alg: ALGORITHM, typ: 'JWT', ...(kid ? { kid } : {}) } },
  );
  return Promise.resolve({ accessToken, expiresIn: ACCESS_TOKEN_TTL_SECONDS });
}

/**
 * Verifies an access token: the algorithm is pinned to RS256 (so `alg: none` and HS256 tokens
 * signed with the public key as an HMAC secret are refused), `exp` and `sub` are required.
 * A token with a `kid` is checked with that key of the key set, and must carry our `iss` and
 * `aud`; an unknown `kid` is refused. A token without one (signed before keys had ids) is
 * checked with the current key, then the key set's others, until it expires: upgrading and
 * rotating log nobody out. Throws {@link InvalidTokenError}.
 */
export async function verifyAccessToken(
  keys: Pick<KeyPair, 'publicKey' | 'kid' | 'verificationKeys'>,
  token: string,
): Promise<VerifiedToken> {
  const kid = keyIdOf(token);
  const options: jwt.VerifyOptions = {
    algorithms: [ALGORITHM],
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
  };
  let candidates: KeyObject[];
  if (kid === undefined) {
    const others = keys.verificationKeys?.().values() ?? [];
    candidates = [keys.publicKey, ...[...others].filter((key) => key !== keys.publicKey)];
  } else {
    // Keys given without ids (a bare public key) check any `kid` with that key.
    const named = keys.kid !== undefined || keys.verificationKeys !== undefined;
    const key =
      keys.verificationKeys?.().get(kid) ??
      (!named || kid === keys.kid ? keys.publicKey : undefined);
    if (!key) throw new InvalidTokenError('bad_signature', 'token key id (kid) is unknown');
    candidates = [key];
    Object.assign(options, { issuer: TOKEN_ISSUER, audience: TOKEN_AUDIENCE });
  }
  let payload: string | jwt.JwtPayload | undefined;
  let failure: unknown;
  for (const key of candidates) {
    try {
      payload = jwt.verify(token, key, options);
      break;
    } catch (error) {
      failure ??= error;
      // Only a wrong signature is worth trying the next key for.
      if (!(error instanceof jwt.JsonWebTokenError) || error.message !== 'invalid signature') break;
    }
  }
  if (payload === undefined) throw toInvalidToken(failure);
  if (typeof payload === 'string') throw new InvalidTokenError('malformed', 'token is malformed');
  if (typeof payload.exp !== 'number') {
    throw new InvalidTokenError('bad_claims', 'token claim "exp" is invalid or missing');
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    throw new InvalidTokenError('bad_claims', 'token has no subject');
  }
  if (isReservedUserId(payload.sub)) {
    throw new InvalidTokenError('bad_claims', 'token subject is a user id reserved by the service');
  }
  const iat = typeof payload.iat === 'number' ? payload.iat : undefined;
  return Promise.resolve({ userId: payload.sub, exp: payload.exp, iat });
}

/** The `kid` of a token's header, if it is a string (a malformed token is refused later). */
function keyIdOf(token: string): string | undefined {
  const decoded = jwt.decode(token, { complete: true });
  const kid = decoded?.header.kid;
  return typeof kid === 'string' ? kid : undefined;
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
    if (/^jwt (issuer|audience) invalid/.test(error.message))
      return new InvalidTokenError('bad_claims', 'token issuer or audience is not this service');
  }
  return new InvalidTokenError('malformed', 'token is malformed');
}

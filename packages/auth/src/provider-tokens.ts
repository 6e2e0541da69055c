import { PROVIDER_ALGORITHMS } from '@agent-backend/config';
import jwt from 'jsonwebtoken';
import { InvalidTokenError, type VerifiedToken } from './access-tokens.js';
import { JwksCache, type JwksCacheOptions } from './jwks-cache.js';
import { isReservedUserId } from './reserved-user-ids.js';

/** Asymmetric algorithms a provider's token may use; `none` and HMAC (HS*) are never accepted. */
export { PROVIDER_ALGORITHMS };
PROVIDER_ALGORITHMS satisfies readonly jwt.Algorithm[];
export type ProviderAlgorithm = (typeof PROVIDER_ALGORITHMS)[number];

export interface ProviderTokenSettings {
  /** `AUTH_JWKS_URL`: an OIDC discovery URL or a JWKS URL. */
  jwksUrl: string;
  /** `AUTH_ISSUER`: the `iss` of the provider's tokens (exact match). */
  issuer: string;
  /** `AUTH_AUDIENCE`: the token's `aud` must contain one of these. */
  audience: readonly string[];
  /** `AUTH_ALGORITHMS`. @default ['RS256', 'ES256'] */
  algorithms?: readonly ProviderAlgorithm[];
  /** `AUTH_USER_CLAIM`: the claim holding the user id. @default 'sub' */
  userClaim?: string;
  /** `AUTH_CLOCK_SKEW_SECONDS`: leeway for `exp`, `nbf` and `iat`. @default 30 */
  clockSkewSeconds?: number;
  /** Most verified tokens remembered until they expire. @default 10_000 */
  maxRememberedTokens?: number;
}

/** Verifies the identity provider's access tokens. */
export interface ProviderTokenVerifier {
  /**
   * Whether `token` says it comes from the provider (its `iss`, not yet verified): such tokens
   * go to {@link verify}, all others to the service's own verifier.
   */
  claims(token: string): boolean;
  /** Verifies a provider token; throws {@link InvalidTokenError}. */
  verify(token: string): Promise<VerifiedToken>;
  /** The provider's key cache (how often it was fetched, for tests and metrics). */
  readonly keys: JwksCache;
}

/** The longest user id the service accepts (the WebSocket URLs' limit). */
const MAX_USER_ID_LENGTH = 128;

/**
 * A verifier for the access tokens of the operator's identity provider. Checks, in this order:
 * the header's `alg` is one of `algorithms` (before any key is looked up, so `none` and HS256
 * tokens never reach the provider), the key for the header's `kid` (from {@link JwksCache}),
 * the signature with that key and only the configured algorithms, `iss`, `aud`, `exp` (required)
 * and `nbf` with the clock skew, and the user claim: a non-empty string of at most 128
 * characters that is not a reserved user id. Valid tokens are remembered until `exp`, so a client
 * reusing its token pays one signature check, as with the service's own tokens.
 */
export function createProviderTokenVerifier(
  settings: ProviderTokenSettings,
  cacheOptions: Omit<JwksCacheOptions, 'url' | 'issuer'> = {},
): ProviderTokenVerifier {
  const algorithms = [...(settings.algorithms ?? ['RS256', 'ES256'])];
  const userClaim = settings.userClaim ?? 'sub';
  const verifyOptions: jwt.VerifyOptions & { complete: false } = {
    algorithms,
    issuer: settings.issuer,
    audience: settings.audience as [string, ...string[]],
    clockTolerance: settings.clockSkewSeconds ?? 30,
    complete: false,
  };
  const keys = new JwksCache({ ...cacheOptions, url: settings.jwksUrl, issuer: settings.issuer });
  const now = cacheOptions.now ?? Date.now;
  const maxRemembered = settings.maxRememberedTokens ?? 10_000;
  const remembered = new Map<string, VerifiedToken>();

  const check = async (token: string): Promise<VerifiedToken> => {
    const decoded = jwt.decode(token, { complete: true });
    if (!decoded || typeof decoded.payload === 'string') {
      throw new InvalidTokenError('malformed', 'token is malformed');
    }
    const { alg, kid } = decoded.header;
    if (!(algorithms as string[]).includes(alg)) {
      throw new InvalidTokenError(
        'bad_algorithm',
        `token algorithm is not allowed (only ${algorithms.join(', ')})`,
      );
    }
    const key = await keys.key(kid);
    if (!key) {
      throw new InvalidTokenError(
        'bad_signature',
        kid === undefined
          ? 'token has no "kid" and the identity provider has several keys'
          : "token signing key is not one of the identity provider's keys",
      );
    }
    if (key.alg !== undefined && key.alg !== alg) {
      throw new InvalidTokenError('bad_algorithm', `token algorithm does not match its key`);
    }
    let payload: jwt.JwtPayload;
    try {
      payload = jwt.verify(token, key.key, verifyOptions) as jwt.JwtPayload;
    } catch (error) {
      throw toInvalidToken(error);
    }
    if (typeof payload.exp !== 'number') {
      throw new InvalidTokenError('bad_claims', 'token claim "exp" is invalid or missing');
    }
    const userId: unknown = payload[userClaim];
    if (typeof userId !== 'string' || userId === '' || userId.length > MAX_USER_ID_LENGTH) {
      throw new InvalidTokenError(
        'bad_claims',
        `token claim "${userClaim}" (the user id) is missing or not a string of 1-${MAX_USER_ID_LENGTH} characters`,
      );
    }
    if (isReservedUserId(userId)) {
      throw new InvalidTokenError(
        'bad_claims',
        'token subject is a user id reserved by the service',
      );
    }
    // `iat` lets an operator's revocation of the user cut off the provider's tokens issued
    // before it, as it does the service's own.
    const iat = typeof payload.iat === 'number' ? payload.iat : undefined;
    return { userId, exp: payload.exp, iat };
  };

  return {
    keys,
    claims: (token) => issuerOf(token) === settings.issuer,
    async verify(token) {
      const known = remembered.get(token);
      if (known) {
        if (known.exp * 1000 > now()) return known;
        remembered.delete(token);
      }
      const result = await check(token);
      if (result.exp * 1000 > now() && maxRemembered > 0) {
        if (remembered.size >= maxRemembered) remembered.delete(remembered.keys().next().value!);
        remembered.set(token, result);
      }
      return result;
    },
  };
}

/**
 * The verifier every route and WebSocket uses: tokens whose `iss` is the provider's go to
 * `provider`, all others to the service's own verifier `own`, which is returned as is when no
 * provider is configured (the service's own tokens pay nothing for this).
 */
export function withProviderTokens(
  own: (token: string) => Promise<VerifiedToken>,
  provider: ProviderTokenVerifier | undefined,
): (token: string) => Promise<VerifiedToken> {
  if (!provider) return own;
  return (token) => (provider.claims(token) ? provider.verify(token) : own(token));
}

/** The unverified `iss` of a JWT, or undefined when it has none or is not a JWT. */
function issuerOf(token: string): unknown {
  const start = token.indexOf('.');
  const end = token.indexOf('.', start + 1);
  if (start < 0 || end < 0) return undefined;
  try {
    const payload: unknown = JSON.parse(
      Buffer.from(token.slice(start + 1, end), 'base64url').toString(),
    );
    return typeof payload === 'object' && payload !== null
      ? (payload as { iss?: unknown }).iss
      : undefined;
  } catch {
    return undefined;
  }
}

/** jsonwebtoken's errors (by class and message, its documented surface) as our reasons. */
function toInvalidToken(error: unknown): InvalidTokenError {
  if (error instanceof jwt.TokenExpiredError) {
    return new InvalidTokenError('expired', 'token has expired');
  }
  if (error instanceof jwt.NotBeforeError) {
    return new InvalidTokenError('bad_claims', 'token is not valid yet ("nbf")');
  }
  if (error instanceof jwt.JsonWebTokenError) {
    if (error.message.startsWith('jwt issuer invalid')) {
      return new InvalidTokenError(
        'bad_claims',
        'token issuer ("iss") is not the identity provider',
      );
    }
    if (error.message.startsWith('jwt audience invalid')) {
      return new InvalidTokenError('bad_claims', 'token audience ("aud") is not this service');
    }
    if (error.message === 'invalid signature') {
      return new InvalidTokenError('bad_signature', 'token signature is invalid');
    }
    if (error.message === 'invalid algorithm' || error.message.includes('must be a symmetric')) {
      return new InvalidTokenError('bad_algorithm', 'token algorithm does not match its key');
    }
  }
  return new InvalidTokenError('malformed', 'token is malformed');
}

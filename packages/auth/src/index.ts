export {
  importKeys,
  loadOrCreateDevKeys,
  resolveKeys,
  throwawayKeys,
  devKeySetPath,
  ALGORITHM,
  type KeyPair,
} from './keys.js';
export {
  signAccessToken,
  verifyAccessToken,
  InvalidTokenError,
  ACCESS_TOKEN_TTL_SECONDS,
  TOKEN_AUDIENCE,
  TOKEN_ISSUER,
  type VerifiedToken,
} from './access-tokens.js';
export { createTokenVerifier, type TokenVerifierOptions } from './token-verifier.js';
export {
  RefreshTokenService,
  InvalidRefreshTokenError,
  hashRefreshToken,
  clientDigest,
  REFRESH_TOKEN_TTL_MS,
} from './refresh-tokens.js';
export {
  assertUserIdAllowed,
  isReservedUserId,
  ReservedUserIdError,
  RESERVED_USER_ID_PREFIXES,
} from './reserved-user-ids.js';
export { JwksCache, type JwksCacheOptions, type ProviderKey } from './jwks-cache.js';
export {
  createProviderTokenVerifier,
  withProviderTokens,
  PROVIDER_ALGORITHMS,
  type ProviderAlgorithm,
  type ProviderTokenSettings,
  type ProviderTokenVerifier,
} from './provider-tokens.js';
export { RevocationList, type RevocationListOptions } from './revocation-list.js';
export {
  currentEntry,
  keyId,
  KeySetFile,
  readKeySetDocument,
  type KeySetEntry,
  type KeySetFileOptions,
} from './key-set.js';

/**
 * Asymmetric JWT algorithms a token of the operator's identity provider may use (the values
 * `AUTH_ALGORITHMS` accepts, and what auth verifies with); `none` and HMAC (HS*) are never among
 * them, so a provider's public key can never serve as an HMAC secret.
 */
export const PROVIDER_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

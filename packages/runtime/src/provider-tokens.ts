import type { Config } from '@agent-backend/config';
import type { Logger } from '@agent-backend/logger';
import { createProviderTokenVerifier, type ProviderTokenVerifier } from '@agent-backend/auth';

/**
 * The identity provider's token verifier from `AUTH_*` (undefined when `AUTH_JWKS_URL` is unset).
 * A failed fetch of its keys is logged and the cached keys keep serving.
 */
export function providerTokensFromConfig(
  config: Config,
  logger: Logger,
): ProviderTokenVerifier | undefined {
  if (!config.AUTH_JWKS_URL || !config.AUTH_ISSUER) return undefined;
  const log = logger.child({ component: 'identity-provider' });
  log.info(
    { jwksUrl: config.AUTH_JWKS_URL, issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE },
    'accepting access tokens of the identity provider',
  );
  return createProviderTokenVerifier(
    {
      jwksUrl: config.AUTH_JWKS_URL,
      issuer: config.AUTH_ISSUER,
      audience: config.AUTH_AUDIENCE,
      algorithms: config.AUTH_ALGORITHMS,
      userClaim: config.AUTH_USER_CLAIM,
      clockSkewSeconds: config.AUTH_CLOCK_SKEW_SECONDS,
    },
    {
      minRefetchIntervalMs: config.AUTH_JWKS_REFETCH_SECONDS * 1000,
      onFetchError: (error) =>
        log.warn(
          { err: error },
          'fetching the identity provider keys failed; cached keys still used',
        ),
    },
  );
}

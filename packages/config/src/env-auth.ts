import { z } from 'zod';
import { PROVIDER_ALGORITHMS } from './jwt-algorithms.js';
import { optionalString, booleanString, url, operatorToken, commaList } from './env-fields.js';

/**
 * Who may call: the service's signing keys, an identity provider's tokens, operator and
 * development credentials.
 */
export const authEnv = {
  JWT_PUBLIC_KEY: optionalString.describe(
    'RS256 public key, SPKI PEM (inline `\\n` escapes are accepted). Required for api and gateway (or `JWT_PUBLIC_KEY_FILE`)',
  ),
  JWT_PUBLIC_KEY_FILE: optionalString.describe(
    'a file holding `JWT_PUBLIC_KEY` (set one of the two)',
  ),
  JWT_PRIVATE_KEY: optionalString.describe(
    'RS256 private key, PKCS8 PEM. Required for api (or `JWT_PRIVATE_KEY_FILE`)',
  ),
  JWT_PRIVATE_KEY_FILE: optionalString.describe(
    'a file holding `JWT_PRIVATE_KEY` (set one of the two)',
  ),
  JWT_KEYS_FILE: optionalString.describe(
    'a key set file (JSON, `{ "keys": [{ kid, publicKey, privateKey, activeFrom, verifyUntil }] }`) instead of one PEM pair: every process re-reads it within 2 s of a change, signs with the newest active key and verifies each key id until its `verifyUntil`. `pnpm keys:rotate` writes it. Give every replica the same file; it wins over `JWT_PUBLIC_KEY` / `JWT_PRIVATE_KEY`. Unset in the all-in-one: `DATA_DIR/jwt-keys.json` when `keys:rotate` wrote one. See [auth.md](auth.md#rotating-the-signing-key)',
  ),
  AUTH_JWKS_URL: url(['http:', 'https:']).describe(
    "your identity provider's keys, to accept its access tokens beside the service's own: an OIDC discovery URL (`.../.well-known/openid-configuration`, whose `issuer` must equal `AUTH_ISSUER`) or its JWKS URL. Fetched on the first provider token, cached by `kid`, kept while the provider is down. Needs `AUTH_ISSUER` and `AUTH_AUDIENCE`. Unset: only the service's own tokens. See [auth-provider.md](auth-provider.md)",
  ),
  AUTH_ISSUER: optionalString.describe(
    "the `iss` of the provider's tokens, exactly. Tokens with this `iss` are checked against the provider's keys, all others as the service's own",
  ),
  AUTH_AUDIENCE: commaList.describe(
    "a provider token's `aud` must contain one of these (the identifier of this API at the provider). Required with `AUTH_JWKS_URL`",
  ),
  AUTH_ALGORITHMS: commaList
    .transform((v) => (v.length > 0 ? v : ['RS256', 'ES256']))
    .pipe(
      z.array(
        z.enum(PROVIDER_ALGORITHMS, {
          message: `each must be one of ${PROVIDER_ALGORITHMS.join(', ')}`,
        }),
      ),
    )
    .describe(
      'algorithms accepted on provider tokens, of `RS256` `RS384` `RS512` `PS256` `PS384` `PS512` `ES256` `ES384` `ES512`; `none` and HMAC (`HS*`) are refused by the schema',
    ),
  AUTH_USER_CLAIM: z
    .string()
    .min(1)
    .default('sub')
    .describe(
      'the provider token claim that holds the user id (1-128 characters; ids starting with `chat:` or `task:` are refused)',
    ),
  AUTH_CLOCK_SKEW_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(30)
    .describe("leeway for provider tokens' `exp` and `nbf`, for clocks that disagree"),
  AUTH_JWKS_REFETCH_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(30)
    .describe(
      "least time between two fetches of the provider's keys caused by a token with an unknown `kid` (a key just rotated in, or a forged one); such tokens are refused without asking the provider in between",
    ),
  AUTH_SERVICE_TOKEN: operatorToken.describe(
    "credential of the operator's login layer (server to server): `Authorization: Bearer <token>` on `POST /api/auth/token` (a token pair for a signed-in user) and `POST /api/auth/revoke-user` (revoke all of a user's tokens), compared in constant time. At least 16 characters. Unset: both endpoints are 404. Never a user's access token; see [auth.md](auth.md)",
  ),
  INTERNAL_API_SECRET: optionalString.describe(
    'secret for `POST /scheduled-task/sync`; unset: that endpoint answers 503',
  ),
  DEV_TOKENS: booleanString.describe(
    "development only: `POST /api/dev/tokens` issues a token pair for any user id (the playground's mint button, `pnpm demo`). Never in production: anyone reaching the service could act as any user",
  ),
  PLAYGROUND_DEMO_MODEL_URL: optionalString.describe(
    'set by `pnpm demo`: the scripted demo model (an OpenAI-compatible base URL) the playground offers, labelled as scripted',
  ),
};

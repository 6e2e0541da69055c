import { z } from 'zod';

/** Lifetime of an access token in seconds; the spec fixes it at one hour (spec 4.1, 8). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;

/** Body of `POST /api/auth/refresh` (spec 4.1). No Authorization header: the token is the credential. */
export const RefreshRequest = z.object({
  refreshToken: z.string().min(1),
});
export type RefreshRequest = z.infer<typeof RefreshRequest>;

/**
 * 200 answer of the refresh endpoint. `expiresIn` is a literal because clients schedule their
 * next refresh from it and the spec fixes the lifetime; a different value would be a contract
 * change, not a configuration.
 */
export const RefreshResponse = z.object({
  accessToken: z.string().min(1),
  expiresIn: z.literal(ACCESS_TOKEN_TTL_SECONDS),
});
export type RefreshResponse = z.infer<typeof RefreshResponse>;

/**
 * 401 body of the refresh endpoint. The spec fixes this flat shape (spec 7) instead of the
 * service's general {@link ErrorBody}; existing clients read `error` as a string.
 */
export const AuthErrorBody = z.object({
  error: z.string(),
});
export type AuthErrorBody = z.infer<typeof AuthErrorBody>;

/**
 * Body of `POST /api/dev/tokens` (beyond the spec; only with `DEV_TOKENS=true`, for the
 * playground and `pnpm demo`): a token pair for any user id, like `pnpm token:issue`.
 */
export const DevTokenRequest = z.object({
  user_id: z.string().min(1).max(128).regex(/^\S+$/, 'must not contain spaces'),
});
export type DevTokenRequest = z.infer<typeof DevTokenRequest>;

/** 200 answer of `POST /api/dev/tokens`. */
export const DevTokenResponse = z.object({
  refreshToken: z.string().min(1),
  accessToken: z.string().min(1),
});
export type DevTokenResponse = z.infer<typeof DevTokenResponse>;

/**
 * `GET /playground/config.json` (beyond the spec): what the playground offers on this service.
 * `demo_model` is the scripted model of `pnpm demo`, shown labelled as scripted.
 */
export const PlaygroundConfig = z.object({
  dev_tokens: z.boolean(),
  demo_model: z.object({ base_url: z.string(), model_name: z.string() }).nullable(),
});
export type PlaygroundConfig = z.infer<typeof PlaygroundConfig>;

/** 200 answer of `GET /api/auth/whoami` (beyond the spec): the user of the access token. */
export const WhoamiResponse = z.object({
  user_id: z.string(),
});
export type WhoamiResponse = z.infer<typeof WhoamiResponse>;

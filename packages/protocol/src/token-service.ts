import { z } from 'zod';
import { ACCESS_TOKEN_TTL_SECONDS } from './auth.js';

/** A user id as the service's tokens carry it: 1-128 characters without spaces. */
const UserId = z.string().min(1).max(128).regex(/^\S+$/, 'must not contain spaces');

/**
 * Body of `POST /api/auth/token` (beyond the spec): the operator's login layer, authenticated by
 * `AUTH_SERVICE_TOKEN`, asks for a token pair for a user it has signed in.
 */
export const ServiceTokenRequest = z.object({ user_id: UserId });
export type ServiceTokenRequest = z.infer<typeof ServiceTokenRequest>;

/** 200 answer of `POST /api/auth/token`: the refresh answer's shape plus the refresh token. */
export const ServiceTokenResponse = z.object({
  refreshToken: z.string().min(1),
  accessToken: z.string().min(1),
  expiresIn: z.literal(ACCESS_TOKEN_TTL_SECONDS),
});
export type ServiceTokenResponse = z.infer<typeof ServiceTokenResponse>;

/** Body of `POST /api/auth/revoke` (RFC 7009 in spirit): the holder gives up a refresh token. */
export const RevokeRequest = z.object({ refreshToken: z.string().min(1) });
export type RevokeRequest = z.infer<typeof RevokeRequest>;

/** Body of `POST /api/auth/revoke-user` (operator): every token of this user stops working. */
export const RevokeUserRequest = z.object({ user_id: UserId });
export type RevokeUserRequest = z.infer<typeof RevokeUserRequest>;

/**
 * 200 answer of `POST /api/auth/revoke`: empty, and the same whether or not the token existed
 * or was live (RFC 7009 section 2.2).
 */
export const RevokeResponse = z.object({});
export type RevokeResponse = z.infer<typeof RevokeResponse>;

/** 200 answer of `DELETE /api/auth/sessions` and `POST /api/auth/revoke-user`. */
export const RevokeAllResponse = z.object({
  user_id: z.string(),
  /** Refresh tokens that were live and are now revoked. */
  refresh_tokens_revoked: z.number().int().min(0),
});
export type RevokeAllResponse = z.infer<typeof RevokeAllResponse>;

/** One public key of `GET /.well-known/jwks.json` (RFC 7517), an RSA signing key. */
export const PublicJwk = z.object({
  kty: z.literal('RSA'),
  kid: z.string(),
  use: z.literal('sig'),
  alg: z.literal('RS256'),
  n: z.string(),
  e: z.string(),
});
export type PublicJwk = z.infer<typeof PublicJwk>;

/** `GET /.well-known/jwks.json`: every key that verifies the service's access tokens now. */
export const JwksDocument = z.object({ keys: z.array(PublicJwk) });
export type JwksDocument = z.infer<typeof JwksDocument>;

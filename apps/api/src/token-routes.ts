import { randomUUID } from 'node:crypto';
import {
  RevokeAllResponse,
  RevokeRequest,
  RevokeResponse,
  RevokeUserRequest,
  ServiceTokenRequest,
  ServiceTokenResponse,
} from '@agent-backend/protocol';
import { isReservedUserId, RefreshTokenService, signAccessToken } from '@agent-backend/auth';
import { AppError, operatorCredential } from '@agent-backend/http-server';
import type { AuditActor, AuditedRequest, ServiceContext } from '@agent-backend/runtime';

/**
 * Beyond the spec, for the operator's login layer and for users (docs/auth.md):
 * `POST /api/auth/token` (a token pair for a signed-in user; `AUTH_SERVICE_TOKEN`),
 * `POST /api/auth/revoke` (the holder gives up a refresh token), `DELETE /api/auth/sessions`
 * (the caller signs out everywhere) and `POST /api/auth/revoke-user` (the operator revokes all
 * of a user's tokens; `AUTH_SERVICE_TOKEN`). Without `AUTH_SERVICE_TOKEN` the two operator
 * routes are the ordinary 404.
 */
export function registerTokenRoutes(context: ServiceContext): void {
  const { app, config, engines, keys, requireUser, audit } = context;
  const refresh = new RefreshTokenService(engines.db, keys);
  const serviceToken = config.AUTH_SERVICE_TOKEN;
  // Off, the hook is never reached (the routes are not served); a random secret keeps it shut.
  const requireService = operatorCredential(
    'service',
    serviceToken ?? randomUUID(),
    'bearer',
    'auth',
  );

  const revokeAll = revokeUserTokens(context);

  app.post(
    '/api/auth/token',
    {
      body: ServiceTokenRequest,
      preHandler: requireService,
      enabled: serviceToken !== undefined,
      doc: {
        tag: 'auth',
        summary: 'Issue a token pair for a signed-in user (login layer)',
        description:
          "Server to server: the operator's login layer, having signed the user in, gets the " +
          "user's refresh token and a first access token. Authenticated by `AUTH_SERVICE_TOKEN` " +
          '(`Authorization: Bearer`); 404 when it is not configured.',
        responses: { 200: { description: 'A token pair.', json: ServiceTokenResponse } },
        errors: ['invalid_request', 'unauthorized', 'user_id_reserved'],
      },
    },
    async (request) => {
      const { user_id } = request.body;
      if (isReservedUserId(user_id))
        throw new AppError('user_id_reserved', 'user_id is reserved for the service itself');
      const { refreshToken } = await refresh.issue(user_id);
      const { accessToken, expiresIn } = await signAccessToken(keys, user_id);
      request.log.info({ userId: user_id }, 'token pair issued to the login layer');
      await audit.record(
        { action: 'token.issued', userId: user_id, actor: 'login_layer' },
        request,
      );
      return { refreshToken, accessToken, expiresIn } satisfies ServiceTokenResponse;
    },
  );

  app.post(
    '/api/auth/revoke',
    {
      body: RevokeRequest,
      doc: {
        tag: 'auth',
        summary: 'Revoke a refresh token',
        description:
          'The refresh token is the credential; no Authorization header. 200 whether or not the ' +
          'token existed or was still live (RFC 7009). Access tokens already issued from it run ' +
          'until they expire; `DELETE /api/auth/sessions` ends those too.',
        responses: { 200: { description: 'The token no longer works.', json: RevokeResponse } },
      },
    },
    async (request) => {
      const userId = await refresh.revoke(request.body.refreshToken);
      if (userId) await audit.record({ action: 'token.revoked', userId, actor: 'user' }, request);
      return {} satisfies RevokeResponse;
    },
  );

  app.delete(
    '/api/auth/sessions',
    {
      preHandler: requireUser,
      doc: {
        tag: 'auth',
        summary: 'Sign out everywhere',
        description:
          "Revokes every refresh token of the token's user, and refuses every access token of " +
          'the user issued until now within 5 s on every replica (open WebSocket connections ' +
          'are closed with 4401), the one of this request included.',
        responses: { 200: { description: 'Signed out.', json: RevokeAllResponse } },
      },
    },
    async (request) => {
      request.log.info({ userId: request.userId }, 'user signed out everywhere');
      return revokeAll(request.userId, 'user', request);
    },
  );

  app.post(
    '/api/auth/revoke-user',
    {
      body: RevokeUserRequest,
      preHandler: requireService,
      enabled: serviceToken !== undefined,
      doc: {
        tag: 'auth',
        summary: "Revoke all of a user's tokens (operator)",
        description:
          'What `pnpm token:revoke <user_id>` does: every refresh token of the user is revoked, ' +
          'and every access token of the user issued until now is refused within 5 s on every ' +
          'replica; open WebSocket connections are closed with 4401. Authenticated by ' +
          '`AUTH_SERVICE_TOKEN`; 404 when it is not configured.',
        responses: { 200: { description: 'Revoked.', json: RevokeAllResponse } },
        errors: ['unauthorized'],
      },
    },
    async (request) => {
      const { user_id } = request.body;
      request.log.info({ userId: user_id }, 'user revoked by the operator');
      return revokeAll(user_id, 'login_layer', request);
    },
  );
}

/**
 * Revokes all of a user's tokens: refresh tokens first (refused at once everywhere), then the
 * access-token cutoff (every replica within 5 s; gateways close the user's sockets with 4401),
 * and records `user.tokens_revoked`. Sign out everywhere, the login layer's revoke-user and the
 * operator API share it.
 */
export function revokeUserTokens({ engines, keys, revocations, audit }: ServiceContext) {
  const refresh = new RefreshTokenService(engines.db, keys);
  return async (
    userId: string,
    actor: AuditActor,
    request: AuditedRequest,
  ): Promise<RevokeAllResponse> => {
    const count = await refresh.revokeAllForUser(userId);
    await revocations.revokeUser(userId);
    await audit.record(
      { action: 'user.tokens_revoked', userId, actor, details: { refresh_tokens_revoked: count } },
      request,
    );
    return { user_id: userId, refresh_tokens_revoked: count };
  };
}

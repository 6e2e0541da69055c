import {
  AuthErrorBody,
  DevTokenRequest,
  DevTokenResponse,
  RefreshRequest,
  RefreshResponse,
  WhoamiResponse,
} from '@agent-backend/protocol';
import {
  clientDigest,
  InvalidRefreshTokenError,
  isReservedUserId,
  RefreshTokenService,
  ReservedUserIdError,
} from '@agent-backend/auth';
import { AppError } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `POST /api/auth/refresh` (spec 4.1), `GET /api/auth/whoami` (beyond the spec: lets a client
 * or an operator check which user an access token belongs to) and, only with `DEV_TOKENS=true`,
 * `POST /api/dev/tokens` (a token pair for any user id, like `pnpm token:issue`: the
 * playground's "mint a token" and `pnpm demo`).
 */
export function registerAuthRoutes({
  app,
  config,
  engines,
  keys,
  logger,
  requireUser,
  limits,
  audit,
}: ServiceContext): void {
  const refresh = new RefreshTokenService(engines.db, keys);

  app.post(
    '/api/auth/refresh',
    {
      body: RefreshRequest,
      // Per client address (`TRUST_PROXY` decides whether X-Forwarded-For names it).
      limit: limits.rate('refresh'),
      doc: {
        tag: 'auth',
        summary: 'Exchange a refresh token for an access token',
        description:
          'The refresh token is the credential; no Authorization header. At most ' +
          '`RATE_LIMIT_REFRESH_PER_MINUTE` a minute per client address (429 `rate_limited` in ' +
          "the service's error shape over it, with `Retry-After`).",
        responses: {
          200: { description: 'A new access token, valid for one hour.', json: RefreshResponse },
          401: {
            description:
              'The refresh token is unknown, expired or revoked (the flat `{ error }` body the specification fixes).',
            json: AuthErrorBody,
          },
        },
      },
    },
    async (request, reply) => {
      const { refreshToken } = request.body;
      const userAgent = request.headers['user-agent'];
      try {
        const { accessToken, expiresIn, userId, newClient } = await refresh.exchange(
          refreshToken,
          clientDigest(request.ip ?? request.socket.remoteAddress, userAgent),
        );
        // Only a client the token was not last used from: a refresh every hour is no news.
        if (newClient) {
          await audit.record(
            {
              action: 'token.refreshed',
              userId,
              actor: 'user',
              details: { new_client: true, user_agent: userAgent?.slice(0, 200) ?? null },
            },
            request,
          );
        }
        return { accessToken, expiresIn } satisfies RefreshResponse;
      } catch (error) {
        if (!(error instanceof InvalidRefreshTokenError)) throw error;
        return reply.status(401).send({ error: error.message } satisfies AuthErrorBody);
      }
    },
  );

  app.get(
    '/api/auth/whoami',
    {
      preHandler: requireUser,
      doc: {
        tag: 'auth',
        summary: 'The user of the access token',
        responses: { 200: { description: "The token's user.", json: WhoamiResponse } },
      },
    },
    async (request) => ({ user_id: request.userId }) satisfies WhoamiResponse,
  );

  if (config.DEV_TOKENS) {
    logger.warn(
      'DEV_TOKENS is on: POST /api/dev/tokens issues tokens for any user id to anyone who can reach this service; development only',
    );
  }
  const devTokens = {
    body: DevTokenRequest,
    // Off, the path is the ordinary 404; the documents still describe it.
    enabled: config.DEV_TOKENS,
    doc: {
      tag: 'playground',
      summary: 'Mint a token pair for any user (development only)',
      description:
        'Registered only when `DEV_TOKENS=true` (otherwise 404): anyone who reaches the service ' +
        'can then act as any user. For the playground and `pnpm demo`. User ids starting with ' +
        "`chat:` or `task:` are the service's own and refused (400 `user_id_reserved`).",
      responses: { 200: { description: 'A token pair.', json: DevTokenResponse } },
      errors: ['user_id_reserved'] as const,
    },
  };
  app.post('/api/dev/tokens', devTokens, async (request) => {
    const { user_id } = request.body;
    if (isReservedUserId(user_id)) {
      throw new AppError('user_id_reserved', new ReservedUserIdError(user_id).message);
    }
    request.log.info({ userId: user_id }, 'dev token pair issued');
    const pair = await refresh.issuePair(user_id);
    await audit.record(
      { action: 'token.issued', userId: user_id, actor: 'anyone', details: { via: 'dev_tokens' } },
      request,
    );
    return pair satisfies DevTokenResponse;
  });
}

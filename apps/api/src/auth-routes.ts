import {
  DevTokenRequest,
  RefreshRequest,
  type AuthErrorBody,
  type DevTokenResponse,
  type RefreshResponse,
  type WhoamiResponse,
} from '@agent-backend/protocol';
import { InvalidRefreshTokenError, RefreshTokenService } from '@agent-backend/auth';
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
}: ServiceContext): void {
  const refresh = new RefreshTokenService(engines.db, keys);

  app.post('/api/auth/refresh', { body: RefreshRequest }, async (request, reply) => {
    const { refreshToken } = request.body;
    try {
      const { accessToken, expiresIn } = await refresh.exchange(refreshToken);
      return { accessToken, expiresIn } satisfies RefreshResponse;
    } catch (error) {
      if (!(error instanceof InvalidRefreshTokenError)) throw error;
      return reply.status(401).send({ error: error.message } satisfies AuthErrorBody);
    }
  });

  app.get(
    '/api/auth/whoami',
    { preHandler: requireUser },
    async (request) => ({ user_id: request.userId }) satisfies WhoamiResponse,
  );

  if (config.DEV_TOKENS) {
    logger.warn(
      'DEV_TOKENS is on: POST /api/dev/tokens issues tokens for any user id to anyone who can reach this service; development only',
    );
    app.post('/api/dev/tokens', { body: DevTokenRequest }, async (request) => {
      const { user_id } = request.body;
      request.log.info({ userId: user_id }, 'dev token pair issued');
      return (await refresh.issuePair(user_id)) satisfies DevTokenResponse;
    });
  }
}

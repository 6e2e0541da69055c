import {
  RefreshRequest,
  type AuthErrorBody,
  type RefreshResponse,
  type WhoamiResponse,
} from '@agent-backend/protocol';
import { InvalidRefreshTokenError, RefreshTokenService } from '@agent-backend/auth';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `POST /api/auth/refresh` (spec 4.1) and `GET /api/auth/whoami` (beyond the spec: lets a client
 * or an operator check which user an access token belongs to).
 */
export function registerAuthRoutes({ app, engines, keys, requireUser }: ServiceContext): void {
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
    async (request) => ({ user_id: request.userId! }) satisfies WhoamiResponse,
  );
}

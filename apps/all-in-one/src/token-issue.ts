import { isReservedUserId, RefreshTokenService, resolveKeys } from '@agent-backend/auth';
import { requestTokens } from './control-socket.js';
import { runTokenCommand } from './token-cli.js';

/**
 * `pnpm token:issue <user_id>`: prints `{ "refreshToken", "accessToken" }` for a user, with the
 * same environment as the service. With `DATABASE_URL` it writes to PostgreSQL directly; on the
 * embedded default it asks the running all-in-one over its control socket, or opens the PGlite
 * files itself when no service holds them.
 */
runTokenCommand({
  name: 'token:issue',
  refuse: (userId) =>
    isReservedUserId(userId)
      ? `user id "${userId}" is reserved for the service's own use (chat: and task: ids); no token can be issued for it`
      : undefined,
  viaService: requestTokens,
  async direct(db, config, userId) {
    const keys = await resolveKeys({
      publicKeyPem: config.jwtPublicKeyPem,
      privateKeyPem: config.jwtPrivateKeyPem,
      dataDir: config.DATA_DIR,
    });
    return new RefreshTokenService(db, keys).issuePair(userId);
  },
  output: (pair) => ({ refreshToken: pair.refreshToken, accessToken: pair.accessToken }),
});

import { isReservedUserId, RefreshTokenService, resolveKeys } from '@agent-backend/auth';
import { AuditLog } from '@agent-backend/store';
import { ISSUED_BY_CLI, requestTokens } from './control-socket.js';
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
    const pair = await new RefreshTokenService(db, keys).issuePair(userId);
    await new AuditLog(db).record(ISSUED_BY_CLI(userId));
    return pair;
  },
  output: (pair) => ({ refreshToken: pair.refreshToken, accessToken: pair.accessToken }),
});

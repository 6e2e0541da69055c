import { AuditLog, RefreshTokenRepository, TokenCutoffRepository } from '@agent-backend/store';
import { requestRevokeUser, REVOKED_BY_CLI, type RevokedUser } from './control-socket.js';
import { runTokenCommand } from './token-cli.js';

/**
 * `pnpm token:revoke <user_id>`: revokes every refresh token of a user and refuses every access
 * token of the user issued until now (within 5 s on every replica, which poll the cutoffs; open
 * WebSocket connections are closed with 4401). Prints `{ "user_id", "refresh_tokens_revoked" }`.
 * Reaches the store the way `token:issue` does: PostgreSQL directly with `DATABASE_URL`; on the
 * embedded default the running all-in-one over its control socket, or the PGlite files when no
 * service holds them.
 */
runTokenCommand<RevokedUser>({
  name: 'token:revoke',
  viaService: requestRevokeUser,
  async direct(db, _config, userId) {
    const now = new Date();
    const count = await new RefreshTokenRepository(db).revokeAllForUser(userId, now);
    await new TokenCutoffRepository(db).raise(userId, now);
    await new AuditLog(db).record(REVOKED_BY_CLI(userId, count));
    return { user_id: userId, refresh_tokens_revoked: count };
  },
  output: (result) => result,
});

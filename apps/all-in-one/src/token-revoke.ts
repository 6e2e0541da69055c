import { loadConfigOrExit } from '@agent-backend/config';
import { AuditLog, RefreshTokenRepository, TokenCutoffRepository } from '@agent-backend/store';
import { withStore } from './cli-store.js';
import {
  isValidUserId,
  requestRevokeUser,
  REVOKED_BY_CLI,
  type RevokedUser,
} from './control-socket.js';

/**
 * `pnpm token:revoke <user_id>`: revokes every refresh token of a user and refuses every access
 * token of the user issued until now (within 5 s on every replica, which poll the cutoffs; open
 * WebSocket connections are closed with 4401). Prints `{ "user_id", "refresh_tokens_revoked" }`.
 * Reaches the store the way `token:issue` does: PostgreSQL directly with `DATABASE_URL`; on the
 * embedded default the running all-in-one over its control socket, or the PGlite files when no
 * service holds them.
 */
async function main(): Promise<void> {
  const userId = process.argv[2];
  if (!userId || !isValidUserId(userId)) {
    process.stderr.write(
      'usage: pnpm token:revoke <user_id>   (1-128 characters without spaces)\n',
    );
    process.exit(2);
  }
  const config = loadConfigOrExit('all-in-one');
  print(
    await withStore(
      config,
      () => requestRevokeUser(config.DATA_DIR, userId),
      async (db) => {
        const now = new Date();
        const count = await new RefreshTokenRepository(db).revokeAllForUser(userId, now);
        await new TokenCutoffRepository(db).raise(userId, now);
        await new AuditLog(db).record(REVOKED_BY_CLI(userId, count));
        return { user_id: userId, refresh_tokens_revoked: count };
      },
    ),
  );
}

function print(result: RevokedUser): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`token:revoke failed: ${error.message}\n`);
  process.exit(1);
});

import { loadConfigOrExit } from '@agent-backend/config';
import { isReservedUserId, RefreshTokenService, resolveKeys } from '@agent-backend/auth';
import { AuditLog } from '@agent-backend/store';
import { withStore } from './cli-store.js';
import { ISSUED_BY_CLI, isValidUserId, requestTokens } from './control-socket.js';

/**
 * `pnpm token:issue <user_id>`: prints `{ "refreshToken", "accessToken" }` for a user, with the
 * same environment as the service. With `DATABASE_URL` it writes to PostgreSQL directly; on the
 * embedded default it asks the running all-in-one over its control socket, or opens the PGlite
 * files itself when no service holds them.
 */
async function main(): Promise<void> {
  const userId = process.argv[2];
  if (!userId || !isValidUserId(userId)) {
    process.stderr.write('usage: pnpm token:issue <user_id>   (1-128 characters without spaces)\n');
    process.exit(2);
  }
  if (isReservedUserId(userId)) {
    process.stderr.write(
      `token:issue: user id "${userId}" is reserved for the service's own use (chat: and task: ids); no token can be issued for it\n`,
    );
    process.exit(2);
  }
  const config = loadConfigOrExit('all-in-one');
  print(
    await withStore(
      config,
      () => requestTokens(config.DATA_DIR, userId),
      async (db) => {
        const keys = await resolveKeys({
          publicKeyPem: config.jwtPublicKeyPem,
          privateKeyPem: config.jwtPrivateKeyPem,
          dataDir: config.DATA_DIR,
        });
        const pair = await new RefreshTokenService(db, keys).issuePair(userId);
        await new AuditLog(db).record(ISSUED_BY_CLI(userId));
        return pair;
      },
    ),
  );
}

function print(pair: { refreshToken: string; accessToken: string }): void {
  process.stdout.write(
    `${JSON.stringify({ refreshToken: pair.refreshToken, accessToken: pair.accessToken })}\n`,
  );
}

main().catch((error: Error) => {
  process.stderr.write(`token:issue failed: ${error.message}\n`);
  process.exit(1);
});

import { loadConfigOrExit, type Config } from '@agent-backend/config';
import type { Database } from '@agent-backend/store';
import { withStore } from './cli-store.js';
import { isValidUserId } from './control-socket.js';

/** One of the token commands (`token:issue`, `token:revoke`) that act on a user's tokens. */
export interface TokenCommand<T> {
  /** `token:issue`, as the usage and error lines name it. */
  readonly name: string;
  /** Why this user id is refused beyond its form (a reserved id), or undefined. */
  refuse?(userId: string): string | undefined;
  /** Asks the running all-in-one over its control socket. */
  viaService(dataDir: string, userId: string): Promise<T>;
  /** Acts on the store itself (migrated, closed after). */
  direct(db: Database, config: Config, userId: string): Promise<T>;
  /** What the command prints (one JSON line). */
  output(result: T): unknown;
}

/**
 * Runs a token command with the same environment as the service, reaching the store as
 * {@link withStore} does. Exits 2 on a bad user id, 1 on failure.
 */
export function runTokenCommand<T>(command: TokenCommand<T>): void {
  run(command).catch((error: Error) => {
    process.stderr.write(`${command.name} failed: ${error.message}\n`);
    process.exit(1);
  });
}

async function run<T>(command: TokenCommand<T>): Promise<void> {
  const print = (result: T) => process.stdout.write(`${JSON.stringify(command.output(result))}\n`);
  const userId = process.argv[2];
  if (!userId || !isValidUserId(userId)) {
    process.stderr.write(
      `usage: pnpm ${command.name} <user_id>   (1-128 characters without spaces)\n`,
    );
    process.exit(2);
  }
  const refused = command.refuse?.(userId);
  if (refused) {
    process.stderr.write(`${command.name}: ${refused}\n`);
    process.exit(2);
  }
  const config = loadConfigOrExit('all-in-one');
  print(
    await withStore(
      config,
      () => command.viaService(config.DATA_DIR, userId),
      (db) => command.direct(db, config, userId),
    ),
  );
}

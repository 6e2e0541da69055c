/**
 * The simulator renews its access token itself, from its refresh token, whenever the
 * gateway refuses the one it has. Here the service restarts with a new signing key (a key
 * rotation): the simulator's access token, still within its hour, is refused with 4401 when it
 * reconnects; it gets a new one from `POST /api/auth/refresh` (the refresh token is stored in
 * the database, so it survives the rotation) and registers again.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  runEntry,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { keyFiles, requireBuild } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const SIMULATOR = 'packages/node-client/dist/simulate-node.js';

describe('simulate-node token renewal', () => {
  let schema: TestSchema | undefined;
  let service: ServiceProcess | undefined;
  let sim: ReturnType<typeof spawn> | undefined;
  afterAll(async () => {
    sim?.kill('SIGKILL');
    await service?.stop('SIGKILL');
    await schema?.drop();
  });

  it('renews its access token after a reconnect where the gateway refuses it', async () => {
    requireBuild(MAIN, TOKEN_ISSUE, SIMULATOR);
    schema = await createTestSchema('renewal');
    const before = keyFiles();
    const env = (keys: ReturnType<typeof keyFiles>) => ({
      REDIS_URL: testRedisUrl(),
      REDIS_KEY_PREFIX: uniquePrefix('renewal'),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema!.schema,
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      LOG_LEVEL: 'info',
    });
    service = await startServiceProcess({ entry: MAIN, env: env(before) });
    const port = new URL(service.url).port;
    const issued = await runEntry(TOKEN_ISSUE, ['finn'], env(before));
    const { refreshToken } = JSON.parse(issued.stdout) as { refreshToken: string };

    sim = spawn(
      process.execPath,
      [SIMULATOR, '--kind', 'desktop', '--user', 'finn', '--url', `ws://127.0.0.1:${port}`],
      {
        env: { PATH: process.env.PATH ?? '', SIMULATE_NODE_REFRESH_TOKEN: refreshToken },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    sim.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const count = (event: string) =>
      stderr.split('\n').filter((line) => line.split(' ')[1] === event).length;
    await expect.poll(() => count('registered'), { timeout: 30_000 }).toBe(1);
    expect(count('token_refreshed')).toBe(1);

    // The service restarts on the same port with a new key pair: the reconnect is refused.
    expect(await service.stop('SIGTERM')).toBe(0);
    service = await startServiceProcess({
      entry: MAIN,
      env: { ...env(keyFiles()), PORT: port },
    });
    await expect.poll(() => count('registered'), { timeout: 90_000 }).toBe(2);
    expect(count('token_refreshed')).toBe(2);
    expect(stderr).toMatch(/ disconnected .*code=4401/);
    expect(stderr).not.toContain(refreshToken);
  }, 300_000);
});

/**
 * The `migrate` command and `MIGRATE_ON_START=false` (docs/deployment.md, "Migrations"): roles
 * told not to migrate refuse a schema with a pending migration and say what to run; two
 * `migrate` runs at once (two Job pods, or a Job beside an old replica) apply each migration
 * once; afterwards two api replicas and a worker start without migrating and serve.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '@agent-backend/store';
import {
  createTestSchema,
  REPO_ROOT,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { keyFiles, requireBuild } from './helpers.js';

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built entry to its end with exactly `env` (plus PATH and HOME). */
function runToExit(entry: string, env: Record<string, string>): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The `applied` list of the command's `migrations:` log line. */
function appliedBy(run: Finished): string[] {
  const line = run.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; applied?: string[] })
    .find((l) => l.msg.startsWith('migrations:'));
  expect(line, run.stdout + run.stderr).toBeDefined();
  return line!.applied!;
}

describe('migrate command and MIGRATE_ON_START=false', () => {
  requireBuild('apps/all-in-one/dist/migrate.js', 'apps/api/dist/main.js');
  const running: ServiceProcess[] = [];
  let schema: TestSchema;
  const env = () => {
    const files = keyFiles();
    return {
      REDIS_URL: testRedisUrl(),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: uniquePrefix('migrate'),
      JWT_PUBLIC_KEY_FILE: files.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: files.privateKeyFile,
      MIGRATE_ON_START: 'false',
      LOG_LEVEL: 'info',
    };
  };
  afterAll(async () => {
    await Promise.all(running.map((p) => p.stop()));
    await schema?.drop();
  }, 120_000);

  it(
    'refuses to start a role that migrates on a schema that awaits migrations, naming the command',
    { timeout: 360_000 },
    async () => {
      schema = await createTestSchema('migrate');
      // The gateway never migrates: it starts on any schema, as the cluster tests start it first.
      const gateway = await startServiceProcess({
        entry: 'apps/gateway/dist/main.js',
        env: { ...env(), INSTANCE_ID: 'gateway-1' },
        timeoutMs: 150_000,
      });
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      await gateway.stop();
      const api = await runToExit('apps/api/dist/main.js', env());
      expect(api.code).toBe(1);
      expect(api.stderr).toContain('the database schema is behind this version');
      expect(api.stderr).toContain(MIGRATIONS[0]!.id);
      expect(api.stderr).toContain('migrate');
    },
  );

  it(
    'applies every migration once when two migrate commands run at the same time',
    { timeout: 180_000 },
    async () => {
      const runs = await Promise.all([
        runToExit('apps/all-in-one/dist/migrate.js', env()),
        runToExit('apps/all-in-one/dist/migrate.js', env()),
      ]);
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const applied = runs.map(appliedBy);
      expect(applied.flat().sort()).toEqual(MIGRATIONS.map((m) => m.id).sort());
      // Again: nothing left to apply.
      const again = await runToExit('apps/all-in-one/dist/migrate.js', env());
      expect(again.code).toBe(0);
      expect(appliedBy(again)).toEqual([]);
    },
  );

  it(
    'starts two api replicas and a worker without migrating, and they serve',
    { timeout: 400_000 },
    async () => {
      const start = (entry: string, id: string) =>
        startServiceProcess({ entry, env: { ...env(), INSTANCE_ID: id }, timeoutMs: 180_000 });
      running.push(
        ...(await Promise.all([
          start('apps/api/dist/main.js', 'api-1'),
          start('apps/api/dist/main.js', 'api-2'),
          start('apps/worker/dist/main.js', 'worker-1'),
        ])),
      );
      for (const replica of running) {
        expect((await fetch(`${replica.url}/readyz`)).status).toBe(200);
        expect(replica.stdout.join('\n')).not.toContain('migrations:');
      }
    },
  );

  it('exits 2 without DATABASE_URL', { timeout: 180_000 }, async () => {
    const run = await runToExit('apps/all-in-one/dist/migrate.js', {});
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('DATABASE_URL is required');
  });
});

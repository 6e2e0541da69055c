/**
 * `npm run start:*` (scripts/bootstrap.mjs) starts a service with V8's young generation capped
 * at 2 × 4 MB (`--max-semi-space-size=4`, docs/deployment.md "Memory"): the bootstrap hands
 * over to a child process, whose command line is read from /proc. An operator's own
 * `--max-semi-space-size` in NODE_OPTIONS wins, so none is added then (the control: the same
 * check fails on a child started without the flag).
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { Redis } from 'ioredis';
import { keyFiles, requireBuild } from './helpers.js';

/** The command line of the child of `pid` that runs `entry` (the bootstrap also runs esbuild). */
function childCommandLine(pid: number, entry: string): string[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ');
  const lines = children.map((child) =>
    readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean),
  );
  const found = lines.filter((argv) => argv.includes(entry));
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe.runIf(process.platform === 'linux')(
  'the service commands set V8 flags',
  { timeout: 120_000 },
  () => {
    let service: ServiceProcess | undefined;
    let prefix: string | undefined;
    let schema: TestSchema | undefined;
    afterEach(async () => {
      await service?.stop('SIGTERM');
      service = undefined;
      await schema?.drop();
      schema = undefined;
      if (prefix) {
        const redis = new Redis(testRedisUrl());
        try {
          const keys = await redis.keys(`${prefix}*`);
          if (keys.length > 0) await redis.del(...keys);
        } finally {
          redis.disconnect();
        }
      }
    });

    async function startGateway(env: Record<string, string> = {}): Promise<string[]> {
      requireBuild('apps/gateway/dist/main.js');
      const keys = keyFiles();
      prefix = uniquePrefix('node-flags');
      schema = await createTestSchema('node_flags');
      service = await startServiceProcess({
        entry: 'scripts/bootstrap.mjs',
        args: ['start:gateway'],
        env: {
          JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
          REDIS_URL: testRedisUrl(),
          REDIS_KEY_PREFIX: prefix,
          DATABASE_URL: testDatabaseUrl(),
          DATABASE_SCHEMA: schema.schema,
          LOG_LEVEL: 'info',
          ...env,
        },
      });
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      return childCommandLine(service.child.pid!, 'apps/gateway/dist/main.js');
    }

    it('start:gateway runs the gateway with --max-semi-space-size=4', async () => {
      const argv = await startGateway();
      expect(argv.slice(1)).toEqual(['--max-semi-space-size=4', 'apps/gateway/dist/main.js']);
    });

    it("an operator's --max-semi-space-size in NODE_OPTIONS is left to win", async () => {
      const argv = await startGateway({ NODE_OPTIONS: '--max-semi-space-size=8' });
      expect(argv.slice(1)).toEqual(['apps/gateway/dist/main.js']);
    });
  },
);

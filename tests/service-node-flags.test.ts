/**
 * `npm run start:*` (scripts/bootstrap.mjs) starts a service with V8's young generation capped
 * at 2 × 4 MB (`--max-semi-space-size=4`) and glibc's malloc trim threshold fixed
 * (`MALLOC_TRIM_THRESHOLD_`), docs/deployment.md "Memory": the bootstrap hands over to a child
 * process, whose command line and environment are read from /proc. An operator's own values
 * win, so the flag is not added then, however it is spelled (the control: the same reading
 * sees its absence).
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
import { deletePrefixedKeys, keyFiles, requireBuild } from './helpers.js';

/** The child of `pid` that runs `entry` (the bootstrap also runs esbuild's service). */
function serviceChild(pid: number, entry: string): { argv: string[]; env: string[] } {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ');
  const read = (child: string, file: string) =>
    readFileSync(`/proc/${child}/${file}`, 'utf8').split('\0').filter(Boolean);
  const found = children.filter((child) => read(child, 'cmdline').includes(entry));
  expect(found).toHaveLength(1);
  return { argv: read(found[0]!, 'cmdline'), env: read(found[0]!, 'environ') };
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
      if (prefix) await deletePrefixedKeys(prefix);
    });

    async function startGateway(
      env: Record<string, string> = {},
    ): Promise<{ argv: string[]; env: string[] }> {
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
      return serviceChild(service.child.pid!, 'apps/gateway/dist/main.js');
    }

    it('start:gateway runs the gateway with --max-semi-space-size=4 and a fixed malloc trim threshold', async () => {
      const child = await startGateway();
      expect(child.argv.slice(1)).toEqual(['--max-semi-space-size=4', 'apps/gateway/dist/main.js']);
      expect(child.env).toContain('MALLOC_TRIM_THRESHOLD_=131072');
    });

    it("an operator's --max-semi-space-size and MALLOC_TRIM_THRESHOLD_ are left to win", async () => {
      const child = await startGateway({
        NODE_OPTIONS: '--max-semi-space-size=8',
        MALLOC_TRIM_THRESHOLD_: '262144',
      });
      expect(child.argv.slice(1)).toEqual(['apps/gateway/dist/main.js']);
      expect(child.env).toContain('MALLOC_TRIM_THRESHOLD_=262144');
      expect(child.env).not.toContain('MALLOC_TRIM_THRESHOLD_=131072');
    });

    it("an operator's flag spelled with underscores (V8 reads them as dashes) still wins", async () => {
      // Added on the command line, the default would override NODE_OPTIONS' own value.
      const child = await startGateway({ NODE_OPTIONS: '--max_semi_space_size=8' });
      expect(child.argv.slice(1)).toEqual(['apps/gateway/dist/main.js']);
    });
  },
);

/**
 * Each split role loads only what it serves (docs/BENCHMARKS.md, "Footprint"): started as a real
 * process against Redis and PostgreSQL, with a module hook that refuses the packages of what the
 * role does not do, it starts and answers `/healthz`. The gateway calls no model, connects to no
 * MCP server, runs no job and reads no skill archive; the api and the worker load the MCP SDK and
 * yauzl at their first MCP connection or skill archive, and the OpenAI client in the background
 * right after start (they run agents; their first run does not wait for it). None of them loads
 * PGlite (they run on PostgreSQL), nodemailer (no email sent), jwks-rsa and jose (no identity
 * provider configured), rate-limiter-flexible (the rates are counted in Redis) nor htmlparser2
 * (only the splitting thread reads HTML). The gateway does not load Node's bundled undici either:
 * nothing in it calls `fetch`, and `node:http` is taken as its CommonJS object.
 */
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
import { deletePrefixedKeys, keyFiles, refusingModules, requireBuild } from './helpers.js';

/** Loaded at first use (or never) by every split role: none of them uses it while idle. */
const AT_FIRST_USE = [
  '@modelcontextprotocol/sdk',
  'yauzl',
  '@electric-sql/pglite',
  'nodemailer',
  'jwks-rsa',
  'jose',
  'rate-limiter-flexible',
  'htmlparser2',
];

const ROLES: ReadonlyArray<{
  role: string;
  refused: readonly string[];
  /**
   * Node's bundled dependencies that must stay unloaded (the api and the worker preload openai,
   * which loads undici).
   */
  internals?: readonly string[];
}> = [
  // The gateway relays; it enqueues no job, so BullMQ stays unloaded as well.
  { role: 'gateway', refused: [...AT_FIRST_USE, 'openai', 'bullmq'], internals: ['undici'] },
  { role: 'api', refused: AT_FIRST_USE },
  { role: 'worker', refused: AT_FIRST_USE },
];

describe('each split role loads only what it serves', { timeout: 120_000 }, () => {
  let service: ServiceProcess | undefined;
  let schema: TestSchema | undefined;
  let prefix: string | undefined;
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await schema?.drop();
    schema = undefined;
    if (prefix) await deletePrefixedKeys(prefix);
  });

  for (const { role, refused, internals = [] } of ROLES) {
    it(`the ${role} starts and answers without ${[...refused, ...internals].join(', ')}`, async () => {
      const entry = `apps/${role}/dist/main.js`;
      requireBuild(entry);
      const keys = keyFiles();
      schema = await createTestSchema(`role_modules_${role}`);
      prefix = uniquePrefix(`role-modules-${role}`);
      service = await startServiceProcess({
        entry,
        env: {
          JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
          JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
          REDIS_URL: testRedisUrl(),
          REDIS_KEY_PREFIX: prefix,
          DATABASE_URL: testDatabaseUrl(),
          DATABASE_SCHEMA: schema.schema,
          LOG_LEVEL: 'info',
          NODE_OPTIONS: refusingModules(refused, internals),
        },
      });
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      // The internals' check runs every 10 ms.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect([...service.stdout, ...service.stderr].join('\n')).not.toContain('loaded ');
    });
  }
});

/**
 * Each split role loads only what it serves (docs/BENCHMARKS.md, "Footprint"): started as a real
 * process against Redis and PostgreSQL, with a module hook that refuses the packages of what the
 * role does not do, it starts and answers `/healthz`. The gateway calls no model, connects to no
 * MCP server, runs no job and reads no skill archive; the api and the worker load the MCP SDK and
 * yauzl at their first MCP connection or skill archive, and the OpenAI client in the background
 * right after start (they run agents; their first run does not wait for it). None of them loads
 * PGlite (they run on PostgreSQL) nor nodemailer (no email sent).
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

/** Loaded at first use by every split role: none of them uses it while idle. */
const AT_FIRST_USE = ['@modelcontextprotocol/sdk', 'yauzl', '@electric-sql/pglite', 'nodemailer'];

const ROLES: ReadonlyArray<{ role: string; refused: readonly string[] }> = [
  // The gateway relays; it enqueues no job, so BullMQ stays unloaded as well.
  { role: 'gateway', refused: [...AT_FIRST_USE, 'openai', 'bullmq', 'htmlparser2'] },
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

  for (const { role, refused } of ROLES) {
    it(`the ${role} starts and answers without ${refused.join(', ')}`, async () => {
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
          NODE_OPTIONS: refusingModules(refused),
        },
      });
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      expect([...service.stdout, ...service.stderr].join('\n')).not.toContain('loaded ');
    });
  }
});

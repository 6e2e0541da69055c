/**
 * Each split role loads only what it serves (docs/BENCHMARKS.md, "Footprint"): started as a real
 * process against Redis and PostgreSQL, with a module hook that refuses the packages of what the
 * role does not do, it starts and answers `/healthz`. The gateway calls no model, connects to no
 * MCP server, runs no job and reads no skill archive; the api and the worker load the MCP SDK and
 * yauzl at their first MCP connection or skill archive, and the OpenAI client at their first
 * model call (the api already at its first request that is not a probe). The api opens BullMQ at
 * its first enqueue; the worker, which waits for jobs, loads it at start, without BullMQ's
 * PostgreSQL backend. None of them loads PGlite (they run on PostgreSQL), nodemailer (no email
 * sent), jwks-rsa and jose (no identity provider configured), rate-limiter-flexible (the rates are
 * counted in Redis) nor htmlparser2 (only the splitting thread reads HTML). Nothing in them calls
 * `fetch` while idle, so none loads Node's bundled undici (`node:http` is taken as its CommonJS
 * object).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  'openai',
  // BullMQ's index loads it; the job queue imports BullMQ's classes alone.
  'bullmq/dist/cjs/postgres',
];

const ROLES: ReadonlyArray<{
  role: string;
  refused: readonly string[];
  /** Node's bundled dependencies that must stay unloaded. */
  internals?: readonly string[];
  env?: Record<string, string>;
}> = [
  // The gateway relays and the api enqueues only for some requests: BullMQ stays unloaded, and
  // the api's queue dashboard (an admin token set) loads bull-board at its first page.
  { role: 'gateway', refused: [...AT_FIRST_USE, 'bullmq'], internals: ['undici'] },
  {
    role: 'api',
    refused: [...AT_FIRST_USE, 'bullmq', '@bull-board/api'],
    internals: ['undici'],
    env: { ADMIN_TOKEN: 'a'.repeat(32) },
  },
  { role: 'worker', refused: AT_FIRST_USE, internals: ['undici'] },
];

/** A split role started against the test Redis and a fresh schema, with `env` added. */
async function startRole(role: string, env: Record<string, string>): Promise<ServiceProcess> {
  const entry = `apps/${role}/dist/main.js`;
  requireBuild(entry);
  const keys = keyFiles();
  schema = await createTestSchema(`role_modules_${role}`);
  prefix = uniquePrefix(`role-modules-${role}`);
  return startServiceProcess({
    entry,
    env: {
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      REDIS_URL: testRedisUrl(),
      REDIS_KEY_PREFIX: prefix,
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      LOG_LEVEL: 'info',
      ...env,
    },
  });
}

let schema: TestSchema | undefined;
let prefix: string | undefined;

const output = (service: ServiceProcess) => [...service.stdout, ...service.stderr].join('\n');

describe('each split role loads only what it serves', { timeout: 120_000 }, () => {
  let service: ServiceProcess | undefined;
  afterEach(async () => {
    await service?.stop('SIGKILL');
    service = undefined;
    await schema?.drop();
    schema = undefined;
    if (prefix) await deletePrefixedKeys(prefix);
  });

  for (const { role, refused, internals = [], env = {} } of ROLES) {
    it(`the ${role} starts and answers without ${[...refused, ...internals].join(', ')}`, async () => {
      service = await startRole(role, {
        ...env,
        NODE_OPTIONS: refusingModules(refused, internals),
      });
      expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
      // The internals' check runs every 10 ms.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(output(service)).not.toContain('loaded ');
    });
  }

  it('the api loads the model client at its first request that is not a probe', async () => {
    const api = await startRole('api', { NODE_OPTIONS: refusingModules(['openai']) });
    service = api;
    for (const path of ['/healthz', '/readyz', '/metrics']) await fetch(`${api.url}${path}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(output(api)).not.toContain('loaded ');
    // Any other request (here the API document) starts the import in the background.
    expect((await fetch(`${api.url}/openapi.json`)).status).toBe(200);
    await vi.waitFor(() => expect(output(api)).toContain('loaded openai'), { timeout: 5_000 });
  });
});

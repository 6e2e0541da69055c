/**
 * The modules of features that are not configured stay unloaded: the all-in-one on its
 * embedded default (no REDIS_URL, no DATABASE_URL, no SMTP_URL, no AUTH_JWKS_URL) never loads the
 * Redis client, BullMQ, the PostgreSQL driver, nodemailer nor jwks-rsa and jose; nor, until its
 * first rate-limited request, rate-limiter-flexible; htmlparser2 only in the splitting thread
 * (docs/BENCHMARKS.md, "Footprint"). Each process starts with a module hook that refuses those
 * packages, so loading one fails the start with `loaded <name>`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  runEntry,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  type ServiceProcess,
} from '@agent-backend/testing';
import { keyFiles, refusingModules, requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const API = 'apps/api/dist/main.js';
const REFUSED = [
  'ioredis',
  'bullmq',
  'pg',
  'nodemailer',
  'jwks-rsa',
  'jose',
  'rate-limiter-flexible',
  'htmlparser2',
];

const refusing = () => refusingModules(REFUSED);

describe('modules of unconfigured features', { timeout: 120_000 }, () => {
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
  });

  it('the embedded all-in-one starts and answers without Redis, BullMQ, pg, nodemailer, jwks-rsa, rate-limiter-flexible or htmlparser2', async () => {
    requireBuild(MAIN);
    service = await startServiceProcess({
      entry: MAIN,
      env: { DATA_DIR: tempDir('unconfigured'), LOG_LEVEL: 'info', NODE_OPTIONS: refusing() },
    });
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect([...service.stdout, ...service.stderr].join('\n')).not.toContain('loaded ');
  });

  it('the same hook stops a role configured with PostgreSQL and Redis (the check above can fail)', async () => {
    requireBuild(API);
    const keys = keyFiles();
    const schema = await createTestSchema('unconfigured');
    try {
      const result = await runEntry(API, [], {
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        REDIS_URL: testRedisUrl(),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        PORT: '0',
        HOST: '127.0.0.1',
        NODE_OPTIONS: refusing(),
      });
      expect(result.code).not.toBe(0);
      expect(result.stdout + result.stderr).toMatch(/loaded (pg|ioredis)/);
    } finally {
      await schema.drop();
    }
  });
});

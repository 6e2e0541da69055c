import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { accessToken, API_ENTRY } from './agent-helpers.js';
import { startOwnRedis, type OwnRedis } from './faults/redis-server.js';
import { keyFiles, requireBuild } from './helpers.js';

/**
 * Redis stops while requests under a limit keep coming: `LIMITS_ON_REDIS_ERROR=open` lets them
 * through, `closed` refuses them with 429 `rate_limited`; neither answers a 5xx of its own.
 * A memory delete is the route: it is limited (`writes`) and needs only PostgreSQL otherwise.
 */
describe('limits while Redis is down', () => {
  let redis: OwnRedis;
  let schema: TestSchema;
  const api: Partial<Record<'open' | 'closed', ServiceProcess>> = {};
  let token: string;

  beforeAll(async () => {
    requireBuild(API_ENTRY);
    const keys = keyFiles();
    redis = await startOwnRedis();
    schema = await createTestSchema('limits-outage');
    const env = {
      REDIS_URL: redis.url,
      REDIS_COMMAND_TIMEOUT_MS: '500',
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      RATE_LIMIT_WRITES_PER_MINUTE: '100',
      RATE_LIMIT_REFRESH_PER_MINUTE: '100',
      TOKEN_BUDGET_PER_USER_PER_DAY: '100000',
    };
    for (const mode of ['open', 'closed'] as const) {
      api[mode] = await startServiceProcess({
        entry: API_ENTRY,
        env: {
          ...env,
          REDIS_KEY_PREFIX: uniquePrefix(`outage-${mode}`),
          INSTANCE_ID: `api-${mode}`,
          LIMITS_ON_REDIS_ERROR: mode,
        },
      });
    }
    token = await accessToken(keys.privateKey, 'outage-user');
  });
  afterAll(async () => {
    await Promise.all(Object.values(api).map((p) => p.stop('SIGKILL')));
    await redis?.close();
    await schema?.drop();
  });

  const deleteMemory = (mode: 'open' | 'closed') =>
    fetch(`${api[mode]!.url}/api/memories/00000000-0000-4000-8000-000000000000`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });

  it('answers by the configured mode, never with a 5xx', async () => {
    for (const mode of ['open', 'closed'] as const) {
      const res = await deleteMemory(mode);
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit')).toMatch(/^"writes";r=99;t=\d+$/);
    }

    await redis.stop();

    // A replica drops its leased units when it sees its Redis connection close, which can come
    // a moment after Redis exited: until then a request may still spend a unit it leased while
    // Redis was up (`r=98`). Every answer meanwhile is the route's own, never a 5xx.
    const seen: number[] = [];
    const byMode = async (mode: 'open' | 'closed', expected: number) =>
      vi.waitFor(
        async () => {
          const res = await deleteMemory(mode);
          seen.push(res.status);
          if (res.status !== expected || res.headers.get('ratelimit') !== null)
            throw new Error(`${mode}: not seen the outage yet`);
          return res;
        },
        { timeout: 10_000, interval: 50 },
      );
    const open = await byMode('open', 404); // through, unchecked
    expect(open.headers.get('ratelimit')).toBeNull();

    const closed = await byMode('closed', 429);
    expect(seen.filter((status) => status !== 404 && status !== 429)).toEqual([]);
    expect(closed.headers.get('retry-after')).toBe('5');
    expect(await closed.json()).toMatchObject({
      error: { code: 'rate_limited', details: { limit: 'writes', reason: 'limits_unavailable' } },
    });

    // The budget in the usage report: unknown while Redis is down, never a 5xx.
    for (const mode of ['open', 'closed'] as const) {
      const usage = await fetch(`${api[mode]!.url}/api/usage`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(usage.status).toBe(200);
      expect(((await usage.json()) as { budget: unknown }).budget).toBeNull();
    }
    // A per-address rate: through (an unknown token is 401) or refused.
    const refresh = (mode: 'open' | 'closed') =>
      fetch(`${api[mode]!.url}/api/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refreshToken: 'unknown' }),
      });
    expect((await refresh('open')).status).toBe(401);
    expect((await refresh('closed')).status).toBe(429);

    await redis.start();
    // Once the replica has reconnected, the budget is known again.
    await vi.waitFor(
      async () => {
        const usage = await fetch(`${api.open!.url}/api/usage`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(((await usage.json()) as { budget: unknown }).budget).toMatchObject({
          limit: 100000,
          used: 0,
        });
      },
      { timeout: 10_000, interval: 200 },
    );
  });
});

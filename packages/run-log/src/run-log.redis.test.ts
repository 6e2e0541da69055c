import { closeRedis, createRedis, redisKeys } from '@agent-backend/redis';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRunLogContract } from './run-log.contract.js';
import { createRedisRunLog } from './redis-run-log.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('runlog', { beforeAll, afterAll });
const freshPrefix = () => testRedis.fresh();

describeRunLogContract('redis', async (options) => {
  const prefix = freshPrefix();
  return [
    createRedisRunLog({ url, prefix, ...options }),
    createRedisRunLog({ url, prefix, ...options }),
  ];
});

describe('redis run log', () => {
  it('stores a run as a stream under <prefix>runlog:<runId> with a PX retention', async () => {
    const prefix = freshPrefix();
    const log = createRedisRunLog({ url, prefix, retentionMs: 60_000 });
    try {
      await log.append('r1', [
        { seq: 1, data: 'a' },
        { seq: 2, data: 'b', final: true },
      ]);
      const key = redisKeys(prefix).runLog('r1');
      expect(await testRedis.raw.type(key)).toBe('stream');
      expect(await testRedis.raw.xlen(key)).toBe(2);
      const ttl = await testRedis.raw.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      await log.close();
    }
  });

  it('reuses blocking connections between following reads and closes them on close', async () => {
    const prefix = freshPrefix();
    const name = `test-runlog-${prefix.split(':')[2]}`;
    const redis = createRedis(url, { name });
    const log = createRedisRunLog({ redis, prefix });
    const blocking = async () =>
      String(await testRedis.raw.client('LIST'))
        .split('\n')
        .filter((line) => line.includes(`name=${name}:block`)).length;
    try {
      for (const runId of ['a', 'b', 'c']) {
        await log.append(runId, [{ seq: 1, data: 'x', final: true }]);
        await log.append(`${runId}-open`, [{ seq: 1, data: 'x' }]);
        const seen: number[] = [];
        for await (const entry of log.read(`${runId}-open`, { follow: true, idleTimeoutMs: 50 }))
          seen.push(entry.seq);
        expect(seen).toEqual([1]);
      }
      expect(await blocking()).toBe(1);
      await log.close();
      expect(await blocking()).toBe(0);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      await log.close();
      await closeRedis(redis);
    }
  });
});

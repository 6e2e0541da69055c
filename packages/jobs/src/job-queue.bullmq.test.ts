import { Redis } from 'ioredis';
import { testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBullmqJobQueue } from './bullmq-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';
import type { JobContext, JobQueue } from './job-queue.js';

const url = testRedisUrl();
const connections: Redis[] = [];
const prefixes: string[] = [];
let raw: Redis;

const connect = () => {
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  connections.push(redis);
  return redis;
};
const freshPrefix = () => {
  const prefix = `${uniquePrefix('jobs')}bull`;
  prefixes.push(prefix);
  return prefix;
};

beforeAll(() => {
  raw = connect();
});
afterAll(async () => {
  for (const prefix of prefixes) {
    for (let cursor = '0'; ;) {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await raw.del(...keys);
      if ((cursor = next) === '0') break;
    }
  }
  await Promise.all(connections.map((c) => c.quit().catch(() => undefined)));
});

describeJobQueueContract('bullmq', async () =>
  createBullmqJobQueue({ connection: connect(), prefix: freshPrefix() }),
);

describe('bullmq job queue with replicas', () => {
  it('hands each occurrence of a schedule to exactly one of two replicas', async () => {
    const prefix = freshPrefix();
    const replicas: JobQueue[] = [1, 2].map(() =>
      createBullmqJobQueue({ connection: connect(), prefix }),
    );
    try {
      const seen: Array<{ replica: number; context: JobContext }> = [];
      await Promise.all(
        replicas.map((queue, replica) =>
          queue.process('q', async (_data, context) => void seen.push({ replica, context })),
        ),
      );
      // Both replicas upsert the same schedules, as two API replicas syncing the same task would.
      const timing = { kind: 'cron' as const, pattern: '* * * * * *', tz: 'UTC' };
      const at = Date.now() + 500;
      for (const queue of replicas) {
        await queue.upsertSchedule('q', 'cron', timing, {});
        await queue.upsertSchedule('q', 'once', { kind: 'once', at }, {});
      }
      await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(5), { timeout: 10_000 });
      await replicas[0]!.removeSchedule('q', 'cron');
      const ids = seen.map((s) => s.context.jobId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(seen.filter((s) => s.context.scheduleId === 'once')).toHaveLength(1);
    } finally {
      await Promise.all(replicas.map((q) => q.close()));
    }
  });

  it('delivers again, once, the job of a worker that stopped renewing its lock', async () => {
    const prefix = freshPrefix();
    const dead = createBullmqJobQueue({ connection: connect(), prefix, lockDurationMs: 1_000 });
    const alive = createBullmqJobQueue({ connection: connect(), prefix, lockDurationMs: 1_000 });
    try {
      let started = false;
      const seen: JobContext[] = [];
      // The first attempt blocks its worker's event loop, so the lock is never renewed, as if the
      // process had been killed; later attempts (on either replica) succeed.
      const handler = async (_data: unknown, context: JobContext) => {
        if (!started) {
          started = true;
          const until = Date.now() + 3_500;
          while (Date.now() < until);
          throw new Error('this attempt is already lost');
        }
        seen.push(context);
      };
      await dead.process('q', handler);
      await dead.add('q', { v: 1 }, { jobId: 'stall-me' });
      await vi.waitFor(() => expect(started).toBe(true), { timeout: 10_000 });
      await alive.process('q', handler);
      await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 15_000 });
      await new Promise((r) => setTimeout(r, 1_500));
      expect(seen).toHaveLength(1);
      expect(seen[0]!.jobId).toBe('stall-me');
    } finally {
      await Promise.all([dead.close(), alive.close()]);
    }
  });
});

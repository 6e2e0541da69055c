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
    const replicas: JobQueue[] = await Promise.all(
      [1, 2].map(() => createBullmqJobQueue({ connection: connect(), prefix })),
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

  it('leaves the jobs a paused replica would have taken to the other replica', async () => {
    const prefix = freshPrefix();
    const replicas = await Promise.all(
      [1, 2].map(() => createBullmqJobQueue({ connection: connect(), prefix })),
    );
    try {
      const seen: Array<{ replica: number; n: unknown }> = [];
      await Promise.all(
        replicas.map((queue, replica) =>
          queue.process(
            'q',
            async (data) => void seen.push({ replica, n: (data as { n: unknown }).n }),
            { concurrency: 4 },
          ),
        ),
      );
      await replicas[0]!.pause('q');
      for (let n = 0; n < 20; n++) await replicas[0]!.add('q', { n });
      await vi.waitFor(() => expect(seen).toHaveLength(20), { timeout: 10_000 });
      expect(seen.filter((s) => s.replica === 0)).toEqual([]);
    } finally {
      await Promise.all(replicas.map((q) => q.close()));
    }
  });

  it('delivers again, once, the job of a worker that stopped renewing its lock', async () => {
    const prefix = freshPrefix();
    const dead = await createBullmqJobQueue({
      connection: connect(),
      prefix,
      lockDurationMs: 1_000,
    });
    const alive = await createBullmqJobQueue({
      connection: connect(),
      prefix,
      lockDurationMs: 1_000,
    });
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

/** Every Redis key under `pattern`. */
async function keysOf(pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (let cursor = '0'; ;) {
    const [next, keys] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    if ((cursor = next) === '0') return found.sort();
  }
}

describe('bullmq job retention', () => {
  let calls = 0;
  const handler = async (data: unknown) => {
    calls += 1;
    if ((data as { fail: boolean }).fail) throw new Error('meant to fail');
  };
  /** Runs `ok` jobs that succeed and `bad` that fail (no retry), and waits until all finished. */
  async function runBatch(
    queue: Awaited<ReturnType<typeof createBullmqJobQueue>>,
    ok: number,
    bad: number,
  ) {
    const expected = calls + ok + bad;
    for (let i = 0; i < ok + bad; i++) {
      await queue.add('q', { fail: i >= ok }, { attempts: 1 });
    }
    await vi.waitFor(
      async () => {
        expect(calls).toBe(expected);
        const c = await queue.bullmq.counts('q');
        expect(c.waiting! + c.active! + c.delayed! + c.prioritized!).toBe(0);
      },
      { timeout: 30_000, interval: 100 },
    );
  }

  it('keeps the job keys of a queue flat however many jobs run through it (count bound)', async () => {
    const prefix = freshPrefix();
    const queue = await createBullmqJobQueue({
      connection: connect(),
      prefix,
      retention: { completed: { count: 5 }, failed: { count: 3 } },
    });
    try {
      await queue.process('q', handler, { concurrency: 4 });
      await runBatch(queue, 20, 10);
      const first = await keysOf(`${prefix}:q:*`);
      await runBatch(queue, 120, 40);
      const second = await keysOf(`${prefix}:q:*`);

      // A job is a hash `<prefix>:q:job_<id>` (plus `:logs` for some); the rest are the
      // queue's own keys (id counter, meta, events, the sets).
      const jobs = second.filter((key) => /:q:job_[^:]+$/.test(key));
      expect(jobs).toHaveLength(5 + 3);
      expect(second.length).toBe(first.length);
      const counts = await queue.bullmq.counts('q');
      expect(counts.completed).toBe(5);
      expect(counts.failed).toBe(3);
    } finally {
      await queue.close();
    }
  });

  it('deletes finished jobs past the age bound once a later job finishes', async () => {
    const prefix = freshPrefix();
    const queue = await createBullmqJobQueue({
      connection: connect(),
      prefix,
      retention: { completed: { ageMs: 1_000, count: 1_000 } },
    });
    try {
      await queue.process('q', handler, { concurrency: 4 });
      for (let i = 0; i < 10; i++) await queue.add('q', { fail: false }, { jobId: `old-${i}` });
      await vi.waitFor(async () => expect((await queue.bullmq.counts('q')).completed).toBe(10), {
        timeout: 30_000,
      });
      // Past the age of the first ten: BullMQ trims when the next job finishes.
      await new Promise((r) => setTimeout(r, 2_100));
      await queue.add('q', { fail: false }, { jobId: 'new' });
      await vi.waitFor(async () => expect((await queue.bullmq.counts('q')).completed).toBe(1), {
        timeout: 30_000,
      });
      const jobs = (await keysOf(`${prefix}:q:*`)).filter((key) => /:q:job_[^:]+$/.test(key));
      expect(jobs).toEqual([`${prefix}:q:job_new`]);
      // A forgotten id is a new job again: dedup by job id lasts as long as the job is kept.
      await queue.add('q', { fail: false }, { jobId: 'old-0' });
      await vi.waitFor(async () => expect((await queue.bullmq.counts('q')).completed).toBe(2), {
        timeout: 30_000,
      });
    } finally {
      await queue.close();
    }
  });

  it('forgets a once schedule after its job ran; one still to come stays', async () => {
    const prefix = freshPrefix();
    const queue = await createBullmqJobQueue({ connection: connect(), prefix });
    try {
      const ran: string[] = [];
      await queue.process('q', async (_data, context) => void ran.push(context.scheduleId!));
      await queue.upsertSchedule('q', 'ran', { kind: 'once', at: Date.now() }, {});
      await queue.upsertSchedule('q', 'later', { kind: 'once', at: Date.now() + 3_600_000 }, {});
      await vi.waitFor(() => expect(ran).toEqual(['ran']), { timeout: 10_000 });
      // One entry per schedule that has not run, not one per schedule that ever ran.
      await vi.waitFor(
        async () =>
          expect(Object.keys(await raw.hgetall(`${prefix}:q:ab-once`))).toEqual(['later']),
        { timeout: 10_000 },
      );
      expect(await queue.listSchedules('q')).toEqual(['later']);
    } finally {
      await queue.close();
    }
  });

  it('closes within its drain bound while a handler ignores the abort and never returns', async () => {
    const queue = await createBullmqJobQueue({
      connection: connect(),
      prefix: freshPrefix(),
      drainTimeoutMs: 300,
    });
    const started = vi.fn();
    await queue.process('q', () => {
      started();
      return new Promise<void>(() => undefined);
    });
    await queue.add('q', {});
    await vi.waitFor(() => expect(started).toHaveBeenCalled(), { timeout: 10_000 });
    // Far past the bound (drain plus the forced steps): only a close that never ends misses it.
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      queue.close().then(() => 'closed'),
      new Promise((resolve) => (timer = setTimeout(resolve, 20_000, 'still closing'))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
  }, 30_000);
});

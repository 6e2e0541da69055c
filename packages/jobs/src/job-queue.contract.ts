/**
 * The behaviour every job adapter must share. Adapter-only checks (several replicas, a killed
 * worker) live in `job-queue.<adapter>.test.ts`. Waiting is by polling with deadlines.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextCronOccurrence } from './cron.js';
import {
  DEFAULT_ATTEMPTS,
  JobQueueClosedError,
  UnrecoverableJobError,
  type JobContext,
  type JobQueue,
} from './job-queue.js';

/** Creates a queue in an empty namespace; the suite closes it after each test. */
export type MakeJobQueue = () => Promise<JobQueue>;

const soon = { timeout: 10_000, interval: 20 };

interface Seen {
  data: unknown;
  context: Omit<JobContext, 'signal'>;
  at: number;
}

export function describeJobQueueContract(name: string, makeQueue: MakeJobQueue): void {
  describe(`job queue contract: ${name}`, () => {
    const open: JobQueue[] = [];
    const make = async () => {
      const made = await makeQueue();
      open.push(made);
      return made;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((q) => q.close()));
    });
    const recorder = () => {
      const seen: Seen[] = [];
      const handler = async (data: unknown, context: JobContext) => {
        const { signal: _signal, ...rest } = context;
        seen.push({ data, context: rest, at: Date.now() });
      };
      return { seen, handler };
    };

    it('runs an added job once with its data, on the first attempt', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      const { jobId } = await queue.add('q', { n: 1, nested: { ok: true } }, { jobId: 'job-a' });
      expect(jobId).toBe('job-a');
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      expect(seen[0]!.data).toEqual({ n: 1, nested: { ok: true } });
      expect(seen[0]!.context).toMatchObject({ jobId: 'job-a', attempt: 1 });
    });

    it('ignores a second add with the same job id, also after the first ran', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.add('q', { n: 1 }, { jobId: 'same:id' });
      await queue.add('q', { n: 2 }, { jobId: 'same:id' });
      await queue.process('q', handler);
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      await queue.add('q', { n: 3 }, { jobId: 'same:id' });
      await queue.add('q', { marker: true }, { jobId: 'marker' });
      await vi.waitFor(() => expect(seen).toHaveLength(2), soon);
      expect(seen.map((s) => s.data)).toEqual([{ n: 1 }, { marker: true }]);
    });

    it('holds a delayed job until its delay passed', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      const added = Date.now();
      await queue.add('q', {}, { delayMs: 600 });
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      expect(seen[0]!.at - added).toBeGreaterThanOrEqual(590);
    });

    it('retries a failing job with increasing attempt numbers, up to attempts', async () => {
      const queue = await make();
      const attempts: string[] = [];
      await queue.process('q', async (_data, context) => {
        attempts.push(`${context.attempt} of ${context.attempts}`);
        throw new Error('boom');
      });
      await queue.add('q', {}, { attempts: 2 });
      await vi.waitFor(() => expect(attempts).toEqual(['1 of 2', '2 of 2']), soon);
      await new Promise((r) => setTimeout(r, 2_500));
      expect(attempts).toEqual(['1 of 2', '2 of 2']);
    });

    it('does not retry a job that failed as unrecoverable', async () => {
      const queue = await make();
      const attempts: number[] = [];
      await queue.process('q', async (data, context) => {
        if ((data as { marker?: boolean }).marker) {
          attempts.push(-1);
          return;
        }
        attempts.push(context.attempt);
        throw new UnrecoverableJobError('bad payload');
      });
      await queue.add('q', {});
      await vi.waitFor(() => expect(attempts).toEqual([1]), soon);
      await new Promise((r) => setTimeout(r, 1_500));
      await queue.add('q', { marker: true });
      await vi.waitFor(() => expect(attempts).toEqual([1, -1]), soon);
    });

    it('fires a once schedule at its instant, with the occurrence in the context', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      const at = Date.now() + 700;
      await queue.upsertSchedule('q', 'task:1', { kind: 'once', at }, { task: 1 });
      expect(await queue.listSchedules('q')).toEqual(['task:1']);
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      expect(seen[0]!.at).toBeGreaterThanOrEqual(at - 5);
      expect(seen[0]!.data).toEqual({ task: 1 });
      expect(seen[0]!.context).toMatchObject({
        scheduleId: 'task:1',
        scheduledAt: at,
        attempt: 1,
        attempts: DEFAULT_ATTEMPTS,
      });
      await vi.waitFor(async () => expect(await queue.listSchedules('q')).toEqual([]), soon);
    });

    it('fires a once schedule in the past at once', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      const at = Date.now() - 60_000;
      await queue.upsertSchedule('q', 'late', { kind: 'once', at }, {});
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      expect(seen[0]!.context.scheduledAt).toBe(at);
    });

    it('moves a once schedule when it is upserted again, firing only the new instant', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      await queue.upsertSchedule('q', 's', { kind: 'once', at: Date.now() + 60_000 }, { v: 1 });
      const at = Date.now() + 400;
      await queue.upsertSchedule('q', 's', { kind: 'once', at }, { v: 2 });
      await vi.waitFor(() => expect(seen).toHaveLength(1), soon);
      await new Promise((r) => setTimeout(r, 500));
      expect(seen.map((s) => [s.data, s.context.scheduledAt])).toEqual([[{ v: 2 }, at]]);
    });

    it('fires a cron schedule at the instants nextCronOccurrence computes', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.process('q', handler);
      const timing = { kind: 'cron' as const, pattern: '* * * * * *', tz: 'America/New_York' };
      await queue.upsertSchedule('q', 'every-second', timing, { tick: true });
      await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(3), soon);
      expect(await queue.removeSchedule('q', 'every-second')).toBe(true);
      const instants = seen.map((s) => s.context.scheduledAt!);
      for (let i = 1; i < instants.length; i += 1)
        expect(instants[i]).toBe(nextCronOccurrence(timing, instants[i - 1]!));
      expect(new Set(seen.map((s) => s.context.jobId)).size).toBe(seen.length);
      expect(seen.every((s) => s.context.scheduleId === 'every-second')).toBe(true);
      const count = seen.length;
      await new Promise((r) => setTimeout(r, 2_200));
      expect(seen.length).toBeLessThanOrEqual(count + 1);
      expect(await queue.listSchedules('q')).toEqual([]);
    });

    it('removes the waiting and delayed jobs whose data matches, and runs the others', async () => {
      const queue = await make();
      const { seen, handler } = recorder();
      await queue.add('q', { user: 'u1', n: 1 });
      await queue.add('q', { user: 'u1', n: 2 }, { delayMs: 300 });
      await queue.add('q', { user: 'u2', n: 3 });
      const ofU1 = (data: unknown) => (data as { user?: string }).user === 'u1';
      expect(await queue.removeJobs('q', ofU1)).toBe(2);
      expect(await queue.removeJobs('q', ofU1)).toBe(0);
      // Added after the delayed job and due later: once it ran, the removed one would have run.
      await queue.add('q', { user: 'u2', n: 4 }, { delayMs: 600 });
      await queue.process('q', handler);
      await vi.waitFor(
        () => expect(seen.map((s) => s.data)).toContainEqual({ user: 'u2', n: 4 }),
        soon,
      );
      expect(seen.map((s) => (s.data as { n: number }).n).sort()).toEqual([3, 4]);
    });

    it('answers whether a removed schedule existed', async () => {
      const queue = await make();
      expect(await queue.removeSchedule('q', 'nothing')).toBe(false);
      await queue.upsertSchedule('q', 'c', { kind: 'cron', pattern: '0 12 * * *', tz: 'UTC' }, {});
      await queue.upsertSchedule('q', 'o', { kind: 'once', at: Date.now() + 60_000 }, {});
      expect((await queue.listSchedules('q')).sort()).toEqual(['c', 'o']);
      expect(await queue.removeSchedule('q', 'c')).toBe(true);
      expect(await queue.removeSchedule('q', 'o')).toBe(true);
      expect(await queue.removeSchedule('q', 'o')).toBe(false);
      expect(await queue.listSchedules('q')).toEqual([]);
    });

    it('lets running jobs finish once paused, and takes no more', async () => {
      const queue = await make();
      const started: unknown[] = [];
      const finished: unknown[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      await queue.process(
        'q',
        async (data) => {
          started.push(data);
          await gate;
          finished.push(data);
        },
        { concurrency: 4 },
      );
      await queue.add('q', { n: 1 });
      await vi.waitFor(() => expect(started).toHaveLength(1), soon);
      await queue.pause('q');
      release();
      await vi.waitFor(() => expect(finished).toEqual([{ n: 1 }]), soon);
      await queue.add('q', { n: 2 });
      // Waiting for another process's handler (BullMQ: given back if a read already waiting
      // fetched it): never run here.
      await vi.waitFor(async () => {
        expect(await queue.removeJobs('q', (data) => (data as { n?: number }).n === 2)).toBe(1);
      }, soon);
      expect(started).toEqual([{ n: 1 }]);
    });

    it('aborts running handlers on close and rejects use afterwards', async () => {
      const queue = await make();
      let aborted = false;
      let started = false;
      await queue.process('q', async (_data, context) => {
        started = true;
        await new Promise<void>((resolve) =>
          context.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          }),
        );
      });
      await queue.add('q', {});
      await vi.waitFor(() => expect(started).toBe(true), soon);
      await queue.close();
      expect(aborted).toBe(true);
      await expect(queue.add('q', {})).rejects.toBeInstanceOf(JobQueueClosedError);
      await expect(queue.upsertSchedule('q', 'x', { kind: 'once', at: 0 }, {})).rejects.toThrow(
        JobQueueClosedError,
      );
      await queue.close();
    });
  });
}

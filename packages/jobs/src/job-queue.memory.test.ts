import { describe, expect, it, vi } from 'vitest';
import { describeJobQueueContract } from './job-queue.contract.js';
import { createMemoryJobQueue } from './memory-job-queue.js';

describeJobQueueContract('memory', async () => createMemoryJobQueue());

describe('memory job queue', () => {
  it('keeps jobs added before a handler exists and runs them once it registers', async () => {
    const queue = createMemoryJobQueue();
    try {
      const seen: unknown[] = [];
      await queue.add('q', { early: true });
      await new Promise((r) => setTimeout(r, 50));
      await queue.process('q', async (data) => void seen.push(data));
      await vi.waitFor(() => expect(seen).toEqual([{ early: true }]), { timeout: 10_000 });
    } finally {
      await queue.close();
    }
  });

  it('runs up to `concurrency` jobs of a queue at the same time', async () => {
    const queue = createMemoryJobQueue();
    try {
      let running = 0;
      let peak = 0;
      await queue.process(
        'q',
        async () => {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 50));
          running -= 1;
        },
        { concurrency: 3 },
      );
      await Promise.all(Array.from({ length: 9 }, () => queue.add('q', {})));
      await vi.waitFor(() => expect(running).toBe(0), { timeout: 10_000 });
      expect(peak).toBe(3);
    } finally {
      await queue.close();
    }
  });

  it('remembers at most `count` finished ids per queue: an older id runs again when re-added', async () => {
    const queue = createMemoryJobQueue({ retention: { completed: { count: 3 } } });
    try {
      const seen: string[] = [];
      await queue.process('q', async (_data, context) => void seen.push(context.jobId));
      for (const id of ['a', 'b', 'c', 'd']) await queue.add('q', {}, { jobId: id });
      await vi.waitFor(() => expect(seen).toEqual(['a', 'b', 'c', 'd']), { timeout: 10_000 });
      // `b` to `d` are still remembered (ignored); `a` was forgotten, so it is a new job.
      for (const id of ['d', 'b', 'a']) await queue.add('q', {}, { jobId: id });
      await vi.waitFor(() => expect(seen).toEqual(['a', 'b', 'c', 'd', 'a']), { timeout: 10_000 });
    } finally {
      await queue.close();
    }
  });
});

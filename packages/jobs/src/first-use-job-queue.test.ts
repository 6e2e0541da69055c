import { describe, expect, it } from 'vitest';
import { jobQueueAtFirstUse } from './first-use-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';
import { JobQueueClosedError } from './job-queue.js';
import { createMemoryJobQueue } from './memory-job-queue.js';

describeJobQueueContract('opened at first use', async () =>
  jobQueueAtFirstUse(async () => createMemoryJobQueue()),
);

describe('job queue opened at first use', () => {
  it('opens the queue at its first call, once, and not before', async () => {
    let opens = 0;
    const queue = jobQueueAtFirstUse(async () => {
      opens += 1;
      return createMemoryJobQueue();
    });
    expect(opens).toBe(0);
    await Promise.all([queue.add('q', { a: 1 }), queue.listSchedules('q')]);
    await queue.add('q', { a: 2 });
    expect(opens).toBe(1);
    await queue.close();
  });

  it('closed before any call, it never opens and refuses later calls', async () => {
    let opens = 0;
    const queue = jobQueueAtFirstUse(async () => {
      opens += 1;
      return createMemoryJobQueue();
    });
    await queue.close();
    await expect(queue.add('q', {})).rejects.toBeInstanceOf(JobQueueClosedError);
    expect(opens).toBe(0);
  });

  it('open() opens the queue the calls use, once, and is refused after close', async () => {
    let opens = 0;
    const inner = createMemoryJobQueue();
    const queue = jobQueueAtFirstUse(async () => {
      opens += 1;
      return inner;
    });
    expect(await queue.open()).toBe(inner);
    await queue.add('q', { a: 1 });
    expect(await queue.open()).toBe(inner);
    expect(opens).toBe(1);
    await queue.close();
    await expect(queue.open()).rejects.toBeInstanceOf(JobQueueClosedError);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryJobQueue } from '@agent-backend/jobs';
import type { ScheduledTask } from '@agent-backend/protocol';
import { createPostgresDatabase, migrate, type Database } from '@agent-backend/store';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { reconcileSchedules } from './reconcile.js';
import { RunRepository } from './run-repository.js';
import { TaskRepository } from './task-repository.js';
import { SCHEDULED_TASKS_QUEUE } from './task-jobs.js';

const HOUR = 3_600_000;

let schema: TestSchema;
let db: Database;
beforeAll(async () => {
  schema = await createTestSchema('reconcile');
  db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 4 });
  await migrate(db);
});
afterAll(async () => {
  await db?.close();
  await schema?.drop();
});

/** A task due at `at` (UTC), repeating or not. */
function task(id: string, at: number, repeat: 'no-repeat' | 'daily'): ScheduledTask {
  const iso = new Date(at).toISOString();
  return {
    id,
    title: id,
    prompt: `run ${id}`,
    status: 'pending',
    user_id: 'reconcile-user',
    run_mode: 'auto',
    timezone: 'UTC',
    connector: 'none',
    repeat_type: repeat,
    scheduled_date: iso.slice(0, 10),
    scheduled_time: iso.slice(11, 19),
  } as ScheduledTask;
}

describe('reconcileSchedules after the job backend lost its data', () => {
  it('runs again a no-repeat occurrence left running, not one that finished; keeps a running repeating task', async () => {
    const tasks = new TaskRepository(db);
    const runs = new RunRepository(db);
    const at = Math.floor((Date.now() - 60_000) / 1000) * 1000;
    const claim = (taskId: string) =>
      runs.claim({
        taskId,
        scheduledAt: at,
        userId: 'reconcile-user',
        worker: 'worker-gone',
        leaseMs: 30_000,
        requireConfirmed: false,
      });

    // Its run hit the outage and gave its lease back for the retry, which Redis then lost.
    await tasks.upsert(task('left-running', at, 'no-repeat'), 'running', at);
    expect((await claim('left-running')).kind).toBe('run');
    await runs.release('left-running', at, 'worker-gone');
    // Its run ended before the data went: nothing to do.
    await tasks.upsert(task('finished', at, 'no-repeat'), 'running', at);
    await claim('finished');
    await runs.finish('finished', at, 'worker-gone', { status: 'succeeded', output: 'done' });
    // A repeating task whose occurrence was under way: its schedule must come back.
    await tasks.upsert(task('daily-running', at, 'daily'), 'running', at + 24 * HOUR);

    // A fresh queue: what a Redis that restarted empty holds.
    const jobs = createMemoryJobQueue();
    const delivered: string[] = [];
    await jobs.process(SCHEDULED_TASKS_QUEUE, async (_data, context) => {
      delivered.push(context.scheduleId!);
    });
    try {
      const result = await reconcileSchedules({ db, jobs });
      expect(result).toEqual({ scheduled: 2, caughtUp: 1 });
      await expect.poll(() => delivered).toContain('left-running');
      expect(await jobs.listSchedules(SCHEDULED_TASKS_QUEUE)).toContain('daily-running');
      expect(delivered).not.toContain('finished');
      // The running repeating task keeps its state; its run sets it `pending` when it ends.
      expect((await tasks.get('daily-running'))?.status).toBe('running');
    } finally {
      await jobs.close();
    }
  });
});

describe('TaskRepository.listForUser', () => {
  it('lists tasks synced in one transaction in the same order at every call, by id', async () => {
    const tasks = new TaskRepository(db);
    const at = Date.now() + HOUR;
    // Stored in ascending id order, in one transaction: the same updated_at for all three.
    await db.transaction(async (tx) => {
      const inTx = new TaskRepository(tx);
      for (const id of ['list-a', 'list-b', 'list-c']) {
        await inTx.upsert({ ...task(id, at, 'daily'), user_id: 'list-user' }, 'pending', at);
      }
    });
    const listed = await tasks.listForUser('list-user', 10);
    expect(new Set(listed.map((t) => t.updatedAt.getTime())).size).toBe(1);
    expect(listed.map((t) => t.taskId)).toEqual(['list-c', 'list-b', 'list-a']);
    expect((await tasks.listForUser('list-user', 2)).map((t) => t.taskId)).toEqual([
      'list-c',
      'list-b',
    ]);
  });
});

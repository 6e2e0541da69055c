/**
 * Scheduled tasks at scale: syncing 10,000 tasks (PostgreSQL record + BullMQ job scheduler per
 * task) and how late occurrences fire, each against a baseline measured in the same run.
 *
 *   node --import tsx bench/scheduled-tasks.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), TASKS (default 10000), CONCURRENCY (default 32),
 * FIRING (tasks in the firing test, default 2000), UPSERTS (raw BullMQ upserts per strategy,
 * default 1000).
 *
 * - sync: `syncTask` (validation, planning, INSERT ... ON CONFLICT, `upsertJobScheduler`) vs the
 *   bare minimum a scheduler needs per task: one INSERT and one delayed BullMQ job (`jobs.add`, a
 *   thin wrapper over `Queue.add`).
 * - planning (CPU only): `planSchedule` for the same tasks (next occurrences by croner) vs
 *   cron-parser's `next()` twice per task (what sync computed before the direct computation: ours for
 *   `next_run_at`, BullMQ's own on upsert).
 * - BullMQ upsert: `Queue.upsertJobScheduler` for UPSERTS (default 1000) of the same patterns,
 *   with BullMQ's default repeat strategy (cron-parser) vs `cronRepeatStrategy` (croner), to
 *   show how much of the sync is BullMQ's own cron cost.
 * - firing: `no-repeat` tasks due within a 5 s window, consumed by a BullMQ worker (concurrency
 *   32); lateness = handler start - occurrence instant. Baseline: `setTimeout` to the same
 *   instants in the same process.
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import { createBullmqJobQueue, type ScheduleTiming } from '../packages/jobs/src/index.js';
import { CronExpressionParser } from 'cron-parser';
import { cronRepeatStrategy } from '../packages/jobs/src/cron.js';
import { createPostgresDatabase, migrate } from '../packages/store/src/index.js';
import { SCHEDULED_TASKS_QUEUE, syncTask } from '../packages/scheduler/src/index.js';
import { planSchedule } from '../packages/scheduler/src/schedule-rules.js';
import { ScheduledTask, TaskSyncRequest } from '../packages/protocol/src/index.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const dbUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const taskCount = Number(process.env.TASKS ?? 10_000);
const concurrency = Number(process.env.CONCURRENCY ?? 32);
const firingCount = Number(process.env.FIRING ?? 2_000);
const upsertCount = Number(process.env.UPSERTS ?? 1_000);
// BullMQ is a dependency of packages/jobs, not of the root: load it from there, typed by the
// little this bench uses.
const run = Math.random().toString(36).slice(2, 8);
const prefix = `bench:sched:${run}:`;
const schema = `bench_sched_${run}`;

async function pool<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<number> {
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
  return performance.now() - start;
}
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const admin = new pg.Client({ connectionString: dbUrl });
await admin.connect();
await admin.query(`CREATE SCHEMA "${schema}"`);
const db = await createPostgresDatabase({ url: dbUrl, schema });
await migrate(db);
await db.query('CREATE TABLE bench_baseline (id text PRIMARY KEY, data jsonb NOT NULL)');
const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
const jobs = await createBullmqJobQueue({ connection, prefix: `${prefix}bull` });

try {
  const ids = Array.from({ length: taskCount }, (_, i) => `task-${i}`);
  const taskOf = (id: string, i: number) =>
    ScheduledTask.parse({
      id,
      user_id: `user-${i % 500}`,
      title: `Task ${i}`,
      prompt: 'Summarize my day',
      run_mode: 'auto',
      repeat_type: ['daily', 'weekdays', 'weekly', 'monthly'][i % 4],
      scheduled_time: `${String(i % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`,
      timezone: ['UTC', 'America/New_York', 'Europe/Paris', 'Asia/Tokyo'][i % 4],
    });

  // Planning, CPU only: croner vs cron-parser twice (what a sync paid before).
  const tasks = ids.map((id, k) => taskOf(id, k));
  const planStart = performance.now();
  const timings: Extract<ScheduleTiming, { kind: 'cron' }>[] = [];
  const now = Date.now();
  for (const task of tasks) {
    const plan = planSchedule(task, now);
    if (plan.kind === 'schedule' && plan.timing.kind === 'cron') timings.push(plan.timing);
  }
  const planMs = performance.now() - planStart;
  const sample = timings.slice(0, Math.min(timings.length, 1_000));
  const parserStart = performance.now();
  // cron-parser is BullMQ's default; its start instant is bound at parse time.
  const parserNext = (timing: { pattern: string; tz: string }) =>
    CronExpressionParser.parse(timing.pattern, { currentDate: new Date(now), tz: timing.tz })
      .next()
      .getTime();
  for (const timing of sample) {
    parserNext(timing);
    parserNext(timing);
  }
  const parserMs = ((performance.now() - parserStart) * timings.length) / sample.length;

  // BullMQ's own cost: raw upserts with its default strategy vs cronRepeatStrategy (croner).
  const upsertWith = async (
    name: string,
    settings?: { repeatStrategy: typeof cronRepeatStrategy },
  ) => {
    const queue = new Queue(name, {
      connection,
      prefix: `${prefix}raw`,
      ...(settings ? { settings } : {}),
    });
    const slice = timings.slice(0, upsertCount).map((timing, k) => ({ timing, k }));
    const ms = await pool(slice, ({ timing, k }) =>
      queue.upsertJobScheduler(
        `s-${k}`,
        { pattern: timing.pattern, tz: timing.tz },
        { name, data: {} },
      ),
    );
    await queue.close();
    return ms;
  };
  const upsertDefaultMs = await upsertWith('raw-default');
  const upsertDirectMs = await upsertWith('raw-direct', { repeatStrategy: cronRepeatStrategy });

  const baselineMs = await pool(ids, async (id) => {
    await db.query(
      'INSERT INTO bench_baseline (id, data) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET data = $2',
      [id, JSON.stringify({ id })],
    );
    await jobs.add('baseline', { id }, { jobId: `b-${id}`, delayMs: 86_400_000 });
  });
  let i = 0;
  const syncMs = await pool(ids, async (id) => {
    const request = TaskSyncRequest.parse({ action: 'add', task_id: id, task: tasks[i++] });
    await syncTask({ db, jobs }, request);
  });
  const scheduled = (await jobs.listSchedules(SCHEDULED_TASKS_QUEUE)).length;

  // Firing accuracy.
  const firingQueue = 'firing';
  const start = Date.now() + 8_000;
  const instants = Array.from(
    { length: firingCount },
    (_, k) => start + Math.floor((k * 5_000) / firingCount),
  );
  const bullLateness: number[] = [];
  const timerLateness: number[] = [];
  const done = new Promise<void>((resolve) => {
    void jobs.process(
      firingQueue,
      async (_data, context) => {
        bullLateness.push(Date.now() - context.scheduledAt!);
        if (bullLateness.length === firingCount) resolve();
      },
      { concurrency: 32 },
    );
  });
  await pool(
    instants.map((at, k) => ({ at, k })),
    ({ at, k }) => jobs.upsertSchedule(firingQueue, `fire-${k}`, { kind: 'once', at }, {}),
  );
  for (const at of instants) setTimeout(() => timerLateness.push(Date.now() - at), at - Date.now());
  await done;
  await new Promise((r) => setTimeout(r, 200));
  bullLateness.sort((a, b) => a - b);
  timerLateness.sort((a, b) => a - b);

  const row = (name: string, s: number[], base?: number[]) =>
    `| ${name} | ${pct(s, 50)} | ${pct(s, 99)} | ${s[s.length - 1]} | ${
      base ? `${(pct(s, 99) / Math.max(1, pct(base, 99))).toFixed(1)}× p99` : 'baseline'
    } |`;
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}; ` +
      `${taskCount} tasks, concurrency ${concurrency}; ${firingCount} tasks fired over 5 s\n`,
  );
  console.log('| sync | total ms | tasks/s | ratio |\n| --- | ---: | ---: | --- |');
  console.log(
    `| baseline: INSERT + Queue.add | ${baselineMs.toFixed(0)} | ${((taskCount * 1000) / baselineMs).toFixed(0)} | baseline |`,
  );
  console.log(
    `| syncTask (record + job scheduler) | ${syncMs.toFixed(0)} | ${((taskCount * 1000) / syncMs).toFixed(0)} | ${(syncMs / baselineMs).toFixed(2)}× time |`,
  );
  console.log(`\nschedules in BullMQ after sync: ${scheduled} of ${taskCount}\n`);
  console.log('| planning (CPU only) | total ms | µs/task | ratio |\n| --- | ---: | ---: | --- |');
  console.log(
    `| before: cron-parser next() ×2 (sampled ${sample.length}, scaled) | ${parserMs.toFixed(0)} | ${((parserMs * 1000) / taskCount).toFixed(0)} | baseline |`,
  );
  console.log(
    `| planSchedule (croner) | ${planMs.toFixed(0)} | ${((planMs * 1000) / taskCount).toFixed(0)} | ${(planMs / parserMs).toFixed(4)}× time |\n`,
  );
  console.log(
    '| raw BullMQ upsertJobScheduler | total ms | upserts/s | ratio |\n| --- | ---: | ---: | --- |',
  );
  console.log(
    `| default repeat strategy (cron-parser) | ${upsertDefaultMs.toFixed(0)} | ${((upsertCount * 1000) / upsertDefaultMs).toFixed(0)} | baseline |`,
  );
  console.log(
    `| repeatStrategy: cronRepeatStrategy | ${upsertDirectMs.toFixed(0)} | ${((upsertCount * 1000) / upsertDirectMs).toFixed(0)} | ${(upsertDirectMs / upsertDefaultMs).toFixed(2)}× time |\n`,
  );
  console.log(
    '| firing lateness | p50 ms | p99 ms | max ms | ratio |\n| --- | ---: | ---: | ---: | --- |',
  );
  console.log(row('setTimeout (baseline)', timerLateness));
  console.log(row('BullMQ once schedule → worker', bullLateness, timerLateness));
} finally {
  await jobs.close();
  for (let cursor = '0'; ;) {
    const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await connection.del(...keys);
    if ((cursor = next) === '0') break;
  }
  connection.disconnect();
  await db.close();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}

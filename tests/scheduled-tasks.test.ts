/**
 * Scheduled tasks on the scaled deployment: one api and two worker replicas on real Redis
 * (BullMQ) and PostgreSQL, the default model scripted over real HTTP, a real SMTP server as the
 * email sink. Tasks are due seconds after the sync (`HH:mm:ss` times).
 */
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  textReply,
  uniquePrefix,
  type ScriptedModel,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { Redis } from 'ioredis';
import { accessToken } from './agent-helpers.js';
import { json, keyFiles, post, requireBuild } from './helpers.js';

const API = 'apps/api/dist/main.js';
const WORKER = 'apps/worker/dist/main.js';
const SECRET = 'internal-secret-for-tests';
const MODEL = 'scheduled-model';

interface Mail {
  to: string[];
  body: string;
}

/** `HH:mm:ss` and `YYYY-MM-DD` in UTC, `seconds` from now. */
function dueIn(seconds: number) {
  const at = new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000);
  const iso = at.toISOString();
  return { at, scheduled_date: iso.slice(0, 10), scheduled_time: iso.slice(11, 19) };
}

/** Waits on a loaded machine (CI runs the suite while other processes compete for 2 cores). */
const SLOW = { timeout: 15_000, interval: 100 };

describe('scheduled tasks on BullMQ with two workers', () => {
  const keys = keyFiles();
  const prefix = uniquePrefix('sched');
  const mails: Mail[] = [];
  let schema: TestSchema;
  let model: ScriptedModel;
  let smtp: SMTPServer;
  let env: Record<string, string>;
  let api: ServiceProcess;
  const workers: ServiceProcess[] = [];

  const sync = (body: unknown, secret: string | null = SECRET, url = api.url) =>
    post(
      `${url}/scheduled-task/sync`,
      body,
      secret !== null ? { 'x-internal-secret': secret } : {},
    );
  const read = async (taskId: string) =>
    (await fetch(`${api.url}/scheduled-task/${taskId}`, {
      headers: { 'x-internal-secret': SECRET },
    }).then((r) => r.json())) as {
      status: string;
      runs: Array<{ status: string; attempts: number; output: string | null }>;
    };
  const startWorker = (id: string) =>
    startServiceProcess({ entry: WORKER, env: { ...env, INSTANCE_ID: id } });

  beforeAll(async () => {
    requireBuild(API, WORKER);
    schema = await createTestSchema('sched');
    model = await startScriptedModel();
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, session, callback) {
        let body = '';
        stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
        stream.on('end', () => {
          mails.push({ to: session.envelope.rcptTo.map((r) => r.address), body });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const smtpPort = (smtp.server.address() as AddressInfo).port;
    env = {
      REDIS_URL: testRedisUrl(),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: prefix,
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      INTERNAL_API_SECRET: SECRET,
      DEFAULT_LLM_BASE_URL: model.baseUrl,
      DEFAULT_LLM_API_KEY: 'sk-test-default',
      DEFAULT_LLM_MODEL: MODEL,
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      EMAIL_FROM: 'tasks@example.test',
      JOBS_LOCK_MS: '2000',
    };
    api = await startServiceProcess({ entry: API, env: { ...env, INSTANCE_ID: 'api-1' } });
    workers.push(...(await Promise.all([startWorker('worker-1'), startWorker('worker-2')])));
  });
  afterAll(async () => {
    await Promise.all([api, ...workers].map((p) => p?.stop('SIGKILL')));
    await model?.close();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
    await schema?.drop();
  });

  it('guards sync with the internal secret and validates the body', async () => {
    const task = { id: 'g1', user_id: 'alice', title: 'T', prompt: 'P' };
    expect((await sync({ action: 'add', task_id: 'g1', task }, null)).status).toBe(401);
    expect((await sync({ action: 'add', task_id: 'g1', task }, 'wrong')).status).toBe(401);
    const missing = await json(await sync({ action: 'update', task_id: 'g1' }));
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toContain('task');
    const invalid = await json(
      await sync({
        action: 'add',
        task_id: 'g1',
        task: { ...task, repeat_type: 'hourly', scheduled_date: '2026-13-01', timezone: 'Nowhere' },
      }),
    );
    expect(invalid.status).toBe(400);
    expect(
      (invalid.body as { error: { details: Array<{ path: string }> } }).error.details.map(
        (d) => d.path,
      ),
    ).toEqual(['task.repeat_type', 'task.scheduled_date', 'task.timezone']);
    expect(JSON.stringify(invalid.body)).not.toContain(SECRET);
  });

  it('answers 200 to add, update and remove, idempotently, and a known answer to an unknown remove', async () => {
    const task = {
      id: 'daily-1',
      user_id: 'alice',
      title: 'Daily',
      prompt: 'P',
      repeat_type: 'daily',
      run_mode: 'auto',
    };
    for (const action of ['add', 'add', 'update'] as const) {
      expect(await json(await sync({ action, task_id: 'daily-1', task }))).toEqual({
        status: 200,
        body: { success: true, action, task_id: 'daily-1' },
      });
    }
    expect((await read('daily-1')).status).toBe('pending');
    expect(await json(await sync({ action: 'remove', task_id: 'daily-1' }))).toEqual({
      status: 200,
      body: { success: true, action: 'remove', task_id: 'daily-1' },
    });
    expect((await read('daily-1')).status).toBe('removed');
    expect(await json(await sync({ action: 'remove', task_id: 'never-added' }))).toEqual({
      status: 200,
      body: { success: false, action: 'remove', task_id: 'never-added' },
    });
    const past = { ...task, id: 'past', repeat_type: 'no-repeat', scheduled_date: '2020-01-01' };
    expect((await sync({ action: 'add', task_id: 'past', task: past })).status).toBe(200);
    expect((await read('past')).status).toBe('expired');
  });

  it('runs an auto task once when due, with two workers, and emails the result', async () => {
    model.script(MODEL, [textReply('Your report: all good.')]);
    const due = dueIn(3);
    const task = {
      id: 'auto-1',
      user_id: 'alice',
      title: 'Report',
      prompt: 'Write the report',
      run_mode: 'auto',
      connector: 'none',
      scheduled_date: due.scheduled_date,
      scheduled_time: due.scheduled_time,
      notification_config: { email: { to: 'alice@example.test' }, inApp: true },
    };
    expect((await sync({ action: 'add', task_id: 'auto-1', task })).status).toBe(200);
    await vi.waitFor(async () => expect((await read('auto-1')).status).toBe('completed'), {
      timeout: 20_000,
      interval: 200,
    });
    const state = await read('auto-1');
    expect(state.runs).toMatchObject([
      { status: 'succeeded', attempts: 1, output: 'Your report: all good.' },
    ]);
    await vi.waitFor(
      () => expect(mails.filter((m) => m.body.includes('Report'))).toHaveLength(1),
      SLOW,
    );
    expect(mails.find((m) => m.body.includes('Report'))!.to).toEqual(['alice@example.test']);
    expect(model.requests(MODEL)).toHaveLength(1);
    expect(model.requests(MODEL)[0]!.headers.authorization).toBe('Bearer sk-test-default');

    // The owner's listing (GET /api/scheduled-tasks, runs of every task in one query) on
    // PostgreSQL: the task with its run; another user sees none of it.
    const list = async (user: string) =>
      (await fetch(`${api.url}/api/scheduled-tasks`, {
        headers: { authorization: `Bearer ${await accessToken(keys.privateKey, user)}` },
      }).then((r) => r.json())) as {
        tasks: Array<{ task_id: string; runs: Array<{ status: string; output: string | null }> }>;
      };
    const alice = await list('alice');
    expect(alice.tasks.find((t) => t.task_id === 'auto-1')?.runs).toMatchObject([
      { status: 'succeeded', output: 'Your report: all good.' },
    ]);
    expect((await list('mallory')).tasks).toEqual([]);
  });

  it('asks before running a require-confirmation task and runs it once confirmed', async () => {
    model.script(MODEL, [textReply('Confirmed and done.')]);
    const due = dueIn(2);
    const task = {
      id: 'confirm-1',
      user_id: 'bob',
      title: 'Needs a yes',
      prompt: 'Do it',
      connector: 'none',
      scheduled_date: due.scheduled_date,
      scheduled_time: due.scheduled_time,
      notification_config: { email: { to: 'bob@example.test' } },
    };
    expect((await sync({ action: 'add', task_id: 'confirm-1', task })).status).toBe(200);
    await vi.waitFor(
      async () => expect((await read('confirm-1')).status).toBe('awaiting_confirmation'),
      { timeout: 20_000, interval: 200 },
    );
    await vi.waitFor(
      () => expect(mails.filter((m) => m.to.includes('bob@example.test'))).toHaveLength(1),
      SLOW,
    );
    const body = { task_id: 'confirm-1', scheduled_at: due.at.toISOString(), confirm: true };
    const mallory = await accessToken(keys.privateKey, 'mallory');
    const foreign = await post(`${api.url}/scheduled-task/confirm`, body, {
      authorization: `Bearer ${mallory}`,
    });
    expect(foreign.status).toBe(404);
    const bob = await accessToken(keys.privateKey, 'bob');
    const answer = await json(
      await post(`${api.url}/scheduled-task/confirm`, body, { authorization: `Bearer ${bob}` }),
    );
    expect(answer).toMatchObject({ status: 200, body: { status: 'confirmed' } });
    await vi.waitFor(async () => expect((await read('confirm-1')).status).toBe('completed'), {
      timeout: 20_000,
      interval: 200,
    });
    expect((await read('confirm-1')).runs).toMatchObject([
      { status: 'succeeded', attempts: 1, output: 'Confirmed and done.' },
    ]);
    const again = await post(`${api.url}/scheduled-task/confirm`, body, {
      authorization: `Bearer ${bob}`,
    });
    expect(again.status).toBe(404);
  });

  it(
    'finishes a run whose worker was SIGKILLed mid-agent-call exactly once, on the other worker',
    { timeout: 120_000 },
    async () => {
      let release!: () => void;
      const held = new Promise((resolve) => (release = () => resolve(undefined)));
      model.script(MODEL, [
        { kind: 'stream', pieces: [{ text: 'never finished' }, { waitFor: held }] },
        textReply('Finished after the crash.'),
      ]);
      const due = dueIn(2);
      const task = {
        id: 'kill-1',
        user_id: 'carol',
        title: 'Survives a crash',
        prompt: 'Work',
        run_mode: 'auto',
        connector: 'none',
        scheduled_date: due.scheduled_date,
        scheduled_time: due.scheduled_time,
        notification_config: { email: { to: 'carol@example.test' } },
      };
      expect((await sync({ action: 'add', task_id: 'kill-1', task })).status).toBe(200);
      const [first] = await model.waitForRequests(MODEL, model.requests(MODEL).length + 1, 20_000);
      void first;
      const holder = workers.find((w) =>
        w.stdout.some((l) => l.includes('scheduled run started') && l.includes('kill-1')),
      );
      expect(holder).toBeDefined();
      await holder!.stop('SIGKILL');
      await vi.waitFor(async () => expect((await read('kill-1')).status).toBe('completed'), {
        timeout: 30_000,
        interval: 250,
      });
      release();
      expect((await read('kill-1')).runs).toMatchObject([
        { status: 'succeeded', attempts: 2, output: 'Finished after the crash.' },
      ]);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(mails.filter((m) => m.to.includes('carol@example.test'))).toHaveLength(1);
      workers.splice(workers.indexOf(holder!), 1, await startWorker('worker-3'));
    },
  );

  it('answers 503 when no internal secret is configured', async () => {
    const bare = await startServiceProcess({
      entry: API,
      env: { ...env, INTERNAL_API_SECRET: '', INSTANCE_ID: 'api-bare' },
    });
    try {
      const res = await sync({ action: 'remove', task_id: 'x' }, 'anything', bare.url);
      expect(res.status).toBe(503);
    } finally {
      await bare.stop('SIGKILL');
    }
  });

  it('rebuilds the schedules from PostgreSQL when Redis lost them', async () => {
    const task = { id: 'daily-2', user_id: 'dave', title: 'D', prompt: 'P', repeat_type: 'daily' };
    expect((await sync({ action: 'add', task_id: 'daily-2', task })).status).toBe(200);
    const redis = new Redis(testRedisUrl());
    try {
      const schedulers = `${prefix}bull:scheduled-tasks:repeat`;
      expect(await redis.zscore(schedulers, 'daily-2')).not.toBeNull();
      for (let cursor = '0'; ;) {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}bull*`, 'COUNT', 1000);
        if (found.length > 0) await redis.del(...found);
        if ((cursor = next) === '0') break;
      }
      expect(await redis.zscore(schedulers, 'daily-2')).toBeNull();
      workers.push(await startWorker('worker-4'));
      await vi.waitFor(
        async () => expect(await redis.zscore(schedulers, 'daily-2')).not.toBeNull(),
        SLOW,
      );
      expect(await redis.zscore(schedulers, 'daily-1')).toBeNull(); // removed tasks stay removed
    } finally {
      redis.disconnect();
    }
  });
});

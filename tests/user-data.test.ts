import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  testDatabaseUrl,
  testRedisUrl,
  toolCallsReply,
} from '@agent-backend/testing';
import type { ScriptedModel } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { invoke } from './agent-helpers.js';
import { post } from './helpers.js';
import {
  INTERNAL_SECRET,
  SERVICE_TOKEN,
  eraseMe,
  expectEverythingIn,
  exportOf,
  giveEverything,
  mentionsIn,
  waitUntil,
  type Deployment,
} from './user-data-scenario.js';

/**
 * A user's data exported and erased (docs/operations.md#export-and-erasure) on two API replicas,
 * a gateway and a worker over PostgreSQL and Redis (BullMQ): the export holds every kind of data,
 * the erasure leaves nothing that names the user in any table or Redis key, closes their
 * sockets, ends their tokens, spares another user, and survives a SIGKILL half way.
 */
/** Ids no other text of the test contains, so a search for them finds only their data. */
const ERIN = 'u-erin-7q';
const FINN = 'u-finn-7q';
const GUS = 'u-gus-7q';
const HAL = 'u-hal-7q';
const IVY = 'u-ivy-7q';

describe('a user’s data exported and erased across replicas', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let db: pg.Client;
  let redis: Redis;
  let d: Deployment;
  const sql = async <R extends Record<string, unknown>>(text: string, params?: unknown[]) =>
    (await db.query<R>(text, params)).rows;
  const whoami = async (i: number, token: string) =>
    (
      await fetch(`${cluster.apis[i]!.url}/api/auth/whoami`, {
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;
  /** Redis keys of the deployment, and values of its hashes and strings, that name `id`. */
  const redisMentions = async (id: string) => {
    const found: string[] = [];
    for await (const keys of redis.scanStream({ match: `${cluster.prefix}*`, count: 500 })) {
      for (const key of keys as string[]) {
        if (key.includes(id)) found.push(key);
        const type = await redis.type(key);
        const value =
          type === 'hash'
            ? JSON.stringify(await redis.hgetall(key))
            : type === 'string'
              ? await redis.get(key)
              : '';
        if (value?.includes(id)) found.push(`${key} (value)`);
      }
    }
    return found;
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 1,
      apis: 2,
      workers: 1,
      env: {
        AUTH_SERVICE_TOKEN: SERVICE_TOKEN,
        INTERNAL_API_SECRET: INTERNAL_SECRET,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        ERASURE_LEASE_MS: '1000',
        // A turn's calls one after the other: the turn is recorded for a takeover (its record
        // names the calls with their arguments).
        AGENT_MAX_PARALLEL_TOOLS: '1',
      },
    });
    db = new pg.Client({
      connectionString: testDatabaseUrl(),
      options: `-c search_path=${cluster.env.DATABASE_SCHEMA}`,
    });
    await db.connect();
    redis = new Redis(testRedisUrl());
    d = {
      api: (i) => cluster.apis[i % 2]!.url,
      wsUrl: (path, query) => cluster.wsUrl(0, path, query),
      token: (userId) => cluster.token(userId, Date.now() - 1000),
      model,
    };
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await db?.end();
    redis?.disconnect();
    await model?.close();
  });

  it('exports everything, then erases it everywhere and for good, sparing another user', async () => {
    const erin = await giveEverything(d, ERIN);
    const finn = await giveEverything(d, FINN);
    expectEverythingIn(await exportOf(d.api(1), erin.token), erin);
    const finnBefore = await mentionsIn(sql, FINN);

    // The confirmation is the caller's own id; without it nothing happens.
    for (const confirm of [undefined, FINN]) {
      const refused = await eraseMe(d.api(0), erin.token, confirm);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ error: { code: 'confirmation_required' } });
    }
    expect(await sql(`SELECT 1 FROM agent_sessions WHERE user_id = $1`, [ERIN])).toHaveLength(1);

    const erased = await eraseMe(d.api(0), erin.token, ERIN);
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({
      user_id: ERIN,
      status: 'done',
      removed: {
        refresh_tokens: 1,
        sessions: 1,
        runs: 2,
        approvals: 1,
        memories: 1,
        knowledge_bases: 1,
        knowledge_documents: 1,
        skills: 1,
        scheduled_tasks: 1,
        scheduled_task_runs: 1,
      },
    });
    const removed = erased.body.removed as Record<string, number>;
    expect(removed.messages).toBeGreaterThanOrEqual(6);
    expect(removed.knowledge_chunks).toBeGreaterThanOrEqual(1);
    expect(removed.skill_files).toBeGreaterThanOrEqual(1);
    expect(removed.queued_jobs).toBeGreaterThanOrEqual(1); // the confirmation's timeout job

    // Their node's presence went with the erasure or with its socket, whichever came first: the
    // Redis scan below finds neither. Their sockets close on the gateway, their tokens fail on every replica.
    for (const socket of erin.sockets)
      expect(await socket.closed).toEqual({ code: 4401, reason: 'token has been revoked' });
    await waitUntil(async () => (await whoami(1, erin.token)) === 401);
    expect(await whoami(0, erin.token)).toBe(401);
    const refreshed = await post(`${d.api(1)}/api/auth/refresh`, {
      refreshToken: erin.refreshToken,
    });
    expect(refreshed.status).toBe(401);

    // No row names them but the two that must for an hour: the cutoff that refuses their access
    // tokens, and the erasure's record of whose it was.
    expect(await mentionsIn(sql, ERIN)).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
    expect(await redisMentions(ERIN)).toEqual([]);

    // Erased again (by a token issued since), nothing is left to remove.
    await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
    const again = await eraseMe(d.api(1), await cluster.token(ERIN), ERIN);
    expect(again).toMatchObject({ status: 200, body: { user_id: ERIN, removed: {} } });

    // Once their tokens have expired (moved to now here), the worker forgets them entirely.
    await sql(`UPDATE erasures SET forget_after = now() WHERE user_id = $1`, [ERIN]);
    await waitUntil(async () => (await mentionsIn(sql, ERIN)).length === 0);
    const records = await sql<{ user_id: string | null; status: string }>(
      `SELECT user_id, status FROM erasures WHERE user_id IS NULL`,
    );
    expect(records).toEqual([
      { user_id: null, status: 'done' },
      { user_id: null, status: 'done' },
    ]);

    // The other user kept everything: rows, sockets, tokens, export.
    expect(await mentionsIn(sql, FINN)).toEqual(finnBefore);
    for (const socket of finn.sockets) expect(socket.ws.readyState).toBe(socket.ws.OPEN);
    expect(await whoami(1, finn.token)).toBe(200);
    expectEverythingIn(await exportOf(d.api(0), finn.token), finn);
    expect((await redisMentions(FINN)).length).toBeGreaterThan(0);
  }, 120_000);

  it('an erasure cut short by SIGKILL is finished by the worker, every row counted once', async () => {
    // 300 sessions of 3 messages and a run each, removed 5 sessions per transaction.
    await sql(
      `INSERT INTO agent_sessions (user_id, session_id)
       SELECT $1, 's' || i FROM generate_series(1, 300) i`,
      [GUS],
    );
    await sql(
      `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
       SELECT $1, 's' || i, m, 'r' || i, '{"role":"user","content":"hi"}'
       FROM generate_series(1, 300) i, generate_series(1, 3) m`,
      [GUS],
    );
    await sql(
      `INSERT INTO agent_runs (run_id, user_id, session_id, mode, status)
       SELECT 'r' || i, $1, 's' || i, 'agent', 'done' FROM generate_series(1, 300) i`,
      [GUS],
    );
    const slow = await cluster.startReplica('api', 'api-slow', { ERASURE_BATCH_SIZE: '5' });
    const token = await cluster.token(GUS);
    const request = eraseMe(slow.url, token, GUS).catch((error: unknown) => error);
    await waitUntil(async () => {
      const [row] = await sql<{ n: string | null }>(
        `SELECT removed ->> 'sessions' AS n FROM erasures WHERE user_id = $1`,
        [GUS],
      );
      return Number(row?.n ?? 0) > 0;
    }, 30_000);
    await slow.stop('SIGKILL');
    expect(await request).toBeInstanceOf(Error); // the connection died with the process
    const [cut] = await sql<{ status: string }>(`SELECT status FROM erasures WHERE user_id = $1`, [
      GUS,
    ]);
    expect(cut!.status).toBe('pending');
    expect(
      (await sql(`SELECT 1 FROM agent_sessions WHERE user_id = $1`, [GUS])).length,
    ).toBeGreaterThan(0);

    await waitUntil(async () => {
      const [row] = await sql<{ status: string }>(
        `SELECT status FROM erasures WHERE user_id = $1`,
        [GUS],
      );
      return row?.status === 'done';
    }, 30_000);
    const [done] = await sql<{ removed: Record<string, number> }>(
      `SELECT removed FROM erasures WHERE user_id = $1`,
      [GUS],
    );
    expect(done!.removed).toMatchObject({ sessions: 300, messages: 900, runs: 300 });
    expect(await mentionsIn(sql, GUS)).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
    expect(await redisMentions(GUS)).toEqual([]);
  }, 120_000);
  it('an erasure stops a run streaming on another replica first, and no row of it is left', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    model.script('m-erased-mid-run', [
      { kind: 'stream', pieces: [{ text: 'Once upon' }, { waitFor: held }, { finish: 'stop' }] },
    ]);
    const token = await d.token(HAL);
    const stream = await invoke(d.api(0), token, {
      message: 'Tell a story',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-erasure', modelName: 'm-erased-mid-run' },
    });
    await stream.waitFor((e) => e.data.type === 'message_chunk');
    const [running] = await sql<{ status: string }>(
      `SELECT status FROM agent_runs WHERE user_id = $1`,
      [HAL],
    );
    expect(running!.status).toBe('running');

    // Erased on the other replica while the model still holds the answer open.
    const erased = await eraseMe(d.api(1), token, HAL);
    expect(erased).toMatchObject({ status: 200, body: { removed: { sessions: 1, runs: 1 } } });
    // The run ended before the erasure read anything: its stream is over, the model unanswered.
    const events = await stream.ended;
    expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
    expect(await mentionsIn(sql, HAL)).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);

    // The stopped run let go of the model's answer: what the model says now reaches no run.
    const [request] = model.requests('m-erased-mid-run');
    await model.waitForAbort(request!);
    release();
    expect(request!.completed).toBe(false);
    expect(await mentionsIn(sql, HAL)).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
    expect(await redisMentions(HAL)).toEqual([]);
  }, 120_000);

  it('an erasure removes a suspended run’s turn record, which names its tool calls', async () => {
    model.script('m-erased-serial', [
      toolCallsReply([
        { id: 'call_1', name: 'write_todos', args: { todos: [{ content: 'Ivy packs' }] } },
        { id: 'call_2', name: 'write_todos', args: { todos: [{ content: 'Ivy leaves' }] } },
      ]),
    ]);
    const token = await d.token(IVY);
    const stream = await invoke(d.api(0), token, {
      message: 'Plan my move',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-erasure', modelName: 'm-erased-serial' },
      hitl_config: { default_timeout: 3600 },
    });
    const runId = String((await stream.waitFor((e) => e.data.type === 'session')).data.run_id);
    // The first call waits for its approval, the second has not started: the turn is recorded.
    await stream.waitFor((e) => e.data.type === 'approval_request');
    stream.close();
    const status = async () =>
      (await sql<{ status: string }>(`SELECT status FROM agent_runs WHERE run_id = $1`, [runId]))[0]
        ?.status;
    await waitUntil(async () => (await status()) === 'suspended');
    const turnKey = (await redisMentions(runId)).find((key) =>
      key.endsWith(`agent:run-turn:${runId}`),
    );
    expect(turnKey).toBeDefined();
    expect(await redis.get(turnKey!)).toContain('Ivy leaves');

    const erased = await eraseMe(d.api(1), token, IVY);
    expect(erased).toMatchObject({ status: 200, body: { removed: { sessions: 1, runs: 1 } } });
    expect(await redisMentions(runId)).toEqual([]);
    expect(await redisMentions(IVY)).toEqual([]);
    expect(await mentionsIn(sql, IVY)).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
  }, 120_000);
});

import { request } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequestEvent } from '@agent-backend/protocol';
import {
  startScriptedModel,
  testDatabaseUrl,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke, type SseClient } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';
import { connectClockDevice, eventually, openSocket, type TestSocket } from './ws-client.js';

const ADMIN_TOKEN = 'operator-credential-0123456789';
const SERVICE_TOKEN = 'login-layer-credential-0123456789';

interface AuditRow extends Record<string, unknown> {
  action: string;
  user_id: string | null;
  actor: string;
  client_address: string | null;
  details: Record<string, unknown>;
}

/**
 * The data lifecycle across two API replicas, two gateways and a worker on shared Redis and
 * PostgreSQL (docs/operations.md): the audit log records each security event once whichever
 * replica served it and never a token; the operator API (ADMIN_TOKEN only) looks a user up,
 * disconnects their sockets on every gateway, cancels their run and revokes their tokens; the
 * worker's retention sweep removes exactly what expired and keeps what is live.
 */
describe('audit log, operator API and retention on a cluster', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  const sockets: TestSocket[] = [];
  const streams: SseClient[] = [];
  const api = (i: number) => cluster.apis[i]!.url;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const llm = (modelName: string) => ({
    baseUrl: model.baseUrl,
    apiKey: 'sk-lifecycle-secret',
    modelName,
  });
  const sql = async <R extends Record<string, unknown>>(text: string, params: unknown[] = []) => {
    const client = new pg.Client({
      connectionString: testDatabaseUrl(),
      options: `-c search_path=${cluster.env.DATABASE_SCHEMA}`,
    });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as R[];
    } finally {
      await client.end();
    }
  };
  const auditOf = (userId: string) =>
    sql<AuditRow>(
      `SELECT action, user_id, actor, client_address, details FROM audit_log
        WHERE user_id = $1 ORDER BY event_id`,
      [userId],
    );
  /** A stream of `userId` held at the approval of a `write_todos` call. */
  const heldRun = async (userId: string, modelName: string, sessionId?: string) => {
    model.script(modelName, [
      toolCallsReply([{ id: 'call_1', name: 'write_todos', args: { todos: [{ content: 'x' }] } }]),
      textReply('Done.', 1),
    ]);
    const stream = await invoke(api(0), await cluster.token(userId), {
      message: 'Plan it',
      llm_config: llm(modelName),
      hitl_config: {},
      ...(sessionId ? { session_id: sessionId } : {}),
    });
    streams.push(stream);
    const event = await stream.waitFor((e) => e.data.type === 'approval_request');
    const session = stream.events.find((e) => e.data.type === 'session')!.data as unknown as {
      session_id: string;
      run_id: string;
    };
    return { stream, request: event.data as unknown as ApprovalRequestEvent, ...session };
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 2,
      apis: 2,
      workers: 1,
      env: {
        ADMIN_TOKEN,
        AUTH_SERVICE_TOKEN: SERVICE_TOKEN,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        AGENT_LLM_MAX_RETRIES: '0',
        RETENTION_SESSIONS_DAYS: '30',
        RETENTION_SWEEP_INTERVAL_MS: '1000',
        RETENTION_BATCH_SIZE: '2',
      },
    });
  }, 120_000);
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    for (const stream of streams) stream.close();
    await cluster?.stop();
    await model?.close();
  });

  it("the operator API refuses users' tokens and is 404 without ADMIN_TOKEN", async () => {
    const userToken = await cluster.token('uma');
    for (const headers of [{}, bearer(userToken), bearer('wrong-credential-0123456789')]) {
      const res = await json(await fetch(`${api(1)}/api/operator/users/uma`, { headers }));
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { code: 'unauthorized' } });
    }
    const denied = await post(
      `${api(0)}/api/operator/users/uma/revoke-tokens`,
      {},
      bearer(userToken),
    );
    expect(denied.status).toBe(401);
    const plain = await cluster.startReplica('api', 'api-no-admin', { ADMIN_TOKEN: '' });
    const res = await fetch(`${plain.url}/api/operator/users/uma`, { headers: admin });
    expect(res.status).toBe(404);
    // Refused calls are not operator calls.
    expect(await auditOf('uma')).toEqual([]);
    // They are refusals: each counted where it was refused, recorded once per client address a
    // minute across the replicas, and never with what was presented.
    const refusals = await sql<AuditRow>(
      `SELECT action, user_id, actor, client_address, details FROM audit_log
        WHERE action = 'operator.auth_failed'`,
    );
    expect(refusals).toEqual([
      {
        action: 'operator.auth_failed',
        user_id: null,
        actor: 'anyone',
        client_address: expect.stringMatching(/127\.0\.0\.1/) as unknown,
        details: { method: 'GET', route: '/api/operator/users/:user_id', reason: 'missing' },
      },
    ]);
    const counted = async (i: number) => {
      const text = await (await fetch(`${api(i)}/metrics`)).text();
      return [
        ...text.matchAll(
          /agent_backend_operator_auth_failures_total\{reason="(\w+)"[^}]*\} (\d+)/g,
        ),
      ]
        .map((m) => `${m[1]} ${m[2]}`)
        .sort();
    };
    expect(await counted(1)).toEqual(['missing 1', 'wrong 2']);
    expect(await counted(0)).toEqual(['wrong 1']);
  });

  it('records a flood of refused operator calls a bounded number of times', async () => {
    // 40 client addresses (all of 127/8 is loopback), 3 wrong credentials each, both replicas.
    const refuse = (i: number, address: string) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL(`${api(i)}/api/operator/audit`);
        const req = request(
          { host: url.hostname, port: url.port, path: url.pathname, localAddress: address },
          (res) => resolve(res.statusCode ?? 0),
        );
        req.setHeader('authorization', 'Bearer wrong-credential-0123456789');
        req.on('error', reject).end();
      });
    const addresses = Array.from({ length: 40 }, (_, i) => `127.0.0.${i + 10}`);
    const statuses = await Promise.all(
      addresses.flatMap((address) => [0, 1, 0].map((i) => refuse(i, address))),
    );
    expect(new Set(statuses)).toEqual(new Set([401]));
    const recorded = await sql<{ client_address: string; n: number }>(
      `SELECT client_address, count(*)::int AS n FROM audit_log
        WHERE action = 'operator.auth_failed' AND client_address <> ALL($1::text[])
        GROUP BY client_address`,
      [['127.0.0.1', '::ffff:127.0.0.1']],
    );
    // At most 30 a minute in all (a minute's window may have turned during the flood: 60).
    const total = recorded.reduce((sum, row) => sum + row.n, 0);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(60);
    for (const row of recorded) expect(row.n).toBeLessThanOrEqual(2);
    expect(JSON.stringify(await sql('SELECT * FROM audit_log'))).not.toContain('wrong-credential');
  });

  it('records each security event once across replicas, never a token', async () => {
    const issued = await json(
      await post(`${api(0)}/api/auth/token`, { user_id: 'vera' }, bearer(SERVICE_TOKEN)),
    );
    const { refreshToken, accessToken } = issued.body as {
      refreshToken: string;
      accessToken: string;
    };
    const refresh = (i: number, agent: string) =>
      post(`${api(i)}/api/auth/refresh`, { refreshToken }, { 'user-agent': agent });
    expect((await refresh(1, 'laptop')).status).toBe(200);
    expect((await refresh(0, 'laptop')).status).toBe(200); // the same client: no event
    // A new client on both replicas at once: one event.
    const both = await Promise.all([refresh(0, 'phone'), refresh(1, 'phone')]);
    expect(both.map((r) => r.status)).toEqual([200, 200]);

    const held = await heldRun('vera', 'm-audit');
    const decided = await post(
      `${api(1)}/api/agent/approvals/${held.request.request_id}/decision`,
      { decision: 'approve' },
      bearer(accessToken),
    );
    expect(decided.status).toBe(200);
    await held.stream.ended;
    expect((await post(`${api(1)}/api/auth/revoke`, { refreshToken })).status).toBe(200);
    expect((await post(`${api(0)}/api/auth/revoke`, { refreshToken })).status).toBe(200);

    const events = await auditOf('vera');
    expect(events.map((e) => [e.action, e.actor])).toEqual([
      ['token.issued', 'login_layer'],
      ['token.refreshed', 'user'],
      ['token.refreshed', 'user'],
      ['approval.decided', 'user'],
      ['token.revoked', 'user'],
    ]);
    expect(events.map((e) => e.details.user_agent).slice(1, 3)).toEqual(['laptop', 'phone']);
    expect(events[3]!.details).toMatchObject({
      request_id: held.request.request_id,
      outcome: 'approve',
    });
    for (const event of events) expect(event.client_address).toMatch(/127\.0\.0\.1/);

    // The caller reads their own, a page at a time; another user sees none of them.
    const page = await json(
      await fetch(`${api(0)}/api/me/audit?limit=3`, { headers: bearer(accessToken) }),
    );
    expect(page.status).toBe(200);
    const first = page.body as { events: { action: string }[]; next_cursor: string };
    expect(first.events.map((e) => e.action)).toEqual([
      'token.revoked',
      'approval.decided',
      'token.refreshed',
    ]);
    const rest = await json(
      await fetch(`${api(1)}/api/me/audit?cursor=${first.next_cursor}`, {
        headers: bearer(accessToken),
      }),
    );
    expect((rest.body as { events: unknown[]; next_cursor: null }).next_cursor).toBeNull();
    expect((rest.body as { events: unknown[] }).events).toHaveLength(2);
    const other = await json(
      await fetch(`${api(0)}/api/me/audit`, { headers: bearer(await cluster.token('walt')) }),
    );
    expect(other.body).toEqual({ events: [], next_cursor: null });

    // No token or key anywhere in the table.
    const dump = JSON.stringify(await sql('SELECT * FROM audit_log'));
    for (const secret of [refreshToken, accessToken, SERVICE_TOKEN, ADMIN_TOKEN, 'sk-lifecycle'])
      expect(dump).not.toContain(secret);
  });

  it('looks a user up, disconnects their sockets on every gateway, cancels their run and revokes their tokens', async () => {
    const token = await cluster.token('xena');
    const device = await connectClockDevice(
      cluster.wsUrl(1, '/ws/desktop', { client_id: 'desktop_xena', node_id: 'mac', token }),
    );
    const web = await openSocket(cluster.wsUrl(0, '/ws/web', { user_id: 'xena', token }));
    const bystander = await openSocket(
      cluster.wsUrl(0, '/ws/web', { user_id: 'yuri', token: await cluster.token('yuri') }),
    );
    sockets.push(device, web, bystander);
    const held = await heldRun('xena', 'm-operator');

    const looked = await json(await fetch(`${api(1)}/api/operator/users/xena`, { headers: admin }));
    expect(looked.status).toBe(200);
    expect(looked.body).toMatchObject({
      user_id: 'xena',
      sessions: { count: 1, recent: [{ session_id: held.session_id }] },
      runs: { total: 1, running: [{ run_id: held.run_id, status: 'running' }] },
      nodes_online: [{ node_id: 'mac', node_type: 'desktop' }],
      limits: { max_concurrent_runs: expect.any(Number) as number },
      tokens: { live_refresh_tokens: 0, revoked_before: null },
    });

    const cut = await json(await post(`${api(0)}/api/operator/users/xena/disconnect`, {}, admin));
    expect(cut).toEqual({ status: 200, body: { user_id: 'xena', gateways_reached: 2 } });
    expect((await device.closed).code).toBe(4010);
    expect((await web.closed).code).toBe(4010);
    expect(bystander.ws.readyState).toBe(bystander.ws.OPEN);

    const cancelled = await json(
      await post(`${api(1)}/api/operator/users/xena/runs/${held.run_id}/cancel`, {}, admin),
    );
    expect(cancelled).toMatchObject({
      status: 200,
      body: { run_id: held.run_id, status: 'aborted' },
    });
    const foreign = await post(
      `${api(1)}/api/operator/users/yuri/runs/${held.run_id}/cancel`,
      {},
      admin,
    );
    expect(foreign.status).toBe(404);

    const revoked = await json(
      await post(`${api(0)}/api/operator/users/xena/revoke-tokens`, {}, admin),
    );
    expect(revoked).toEqual({ status: 200, body: { user_id: 'xena', refresh_tokens_revoked: 0 } });
    await eventually(async () => {
      const res = await fetch(`${api(1)}/api/auth/whoami`, { headers: bearer(token) });
      return res.status === 401;
    });

    const audit = await json(
      await fetch(`${api(1)}/api/operator/audit?user_id=xena`, { headers: admin }),
    );
    const actions = (
      audit.body as { events: { action: string; details: { route?: string } }[] }
    ).events
      .map((e) => `${e.action} ${e.details.route ?? ''}`.trim())
      .reverse();
    expect(actions, JSON.stringify(audit.body)).toEqual([
      'operator.call /api/operator/users/:user_id',
      'operator.call /api/operator/users/:user_id/disconnect',
      'operator.call /api/operator/users/:user_id/runs/:run_id/cancel',
      'user.tokens_revoked',
      'operator.call /api/operator/users/:user_id/revoke-tokens',
    ]);
  });

  it('the worker removes expired sessions with every row, and keeps live ones', async () => {
    const token = await cluster.token('zoe');
    const run = async (modelName: string) => {
      model.script(modelName, [textReply('Hello.', 1)]);
      const stream = await invoke(api(1), token, { message: 'Hi', llm_config: llm(modelName) });
      const events = await stream.ended;
      return (
        events.find((e) => e.data.type === 'session')!.data as unknown as { session_id: string }
      ).session_id;
    };
    const expired = await run('m-expired');
    const fresh = await run('m-fresh');
    const waiting = await heldRun('zoe', 'm-waiting');
    const backdate = (sessionId: string) =>
      sql(
        `UPDATE agent_sessions SET updated_at = now() - interval '40 days'
          WHERE user_id = 'zoe' AND session_id = $1`,
        [sessionId],
      );
    await backdate(waiting.session_id); // waiting days for an approval: kept
    await backdate(expired);
    const count = async (table: string, sessionId: string) =>
      (
        await sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${table} WHERE user_id = 'zoe' AND session_id = $1`,
          [sessionId],
        )
      )[0]!.n;
    expect(await count('agent_messages', expired)).toBeGreaterThan(0);
    await eventually(async () => (await count('agent_sessions', expired)) === 0, 30_000);
    for (const table of ['agent_messages', 'agent_runs']) {
      expect(await count(table, expired)).toBe(0);
      expect(await count(table, fresh)).toBeGreaterThan(0);
      expect(await count(table, waiting.session_id)).toBeGreaterThan(0);
    }
    const gone = await fetch(`${api(0)}/api/agent/sessions/${expired}`, { headers: bearer(token) });
    expect(gone.status).toBe(404);
    // The waiting run goes on: approved, it finishes.
    const decided = await post(
      `${api(0)}/api/agent/approvals/${waiting.request.request_id}/decision`,
      { decision: 'approve' },
      bearer(token),
    );
    expect(decided.status).toBe(200);
    expect((await waiting.stream.ended).at(-1)!.data.type).toBe('done');

    const metrics = await (await fetch(`${cluster.workers[0]!.url}/metrics`)).text();
    expect(metrics).toMatch(/agent_backend_retention_removed_total\{kind="sessions"[^}]*\} [1-9]/);
  });

  it('the worker removes audit events past AUDIT_LOG_RETENTION_DAYS', async () => {
    await sql(
      `INSERT INTO audit_log (action, user_id, actor, occurred_at)
       VALUES ('token.issued', 'old-audit', 'cli', now() - interval '400 days'),
              ('token.issued', 'old-audit', 'cli', now() - interval '10 days')`,
    );
    await eventually(async () => (await auditOf('old-audit')).length === 1, 30_000);
  });
});

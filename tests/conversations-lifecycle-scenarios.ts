/**
 * The conversations API's ends of a session and a run (docs/protocol.md): delete with
 * everything of the session (rows, run log, leases), cancel from the replica that does not run
 * it, usage per run and per day. Run by conversations.test.ts with the scenarios of
 * conversations-scenarios.ts, on the same targets.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type {
  AgentRun,
  ApprovalRequestEvent,
  MessageList,
  SessionList,
  UsageReport,
} from '@agent-backend/protocol';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { call, heldRun, isType, path, turn, type Target } from './conversations-scenarios.js';

export function conversationLifecycleScenarios(target: () => Target): void {
  it('deletes a session with everything of it, cancelling its running run first', async () => {
    const t = target();
    const [a, b] = t.urls;
    const user = `deleter-${randomUUID()}`;
    const token = await t.token(user);
    await turn(t, a, token, 'doomed', 'Remember this', 'Remembered');
    const modelName = `m-${randomUUID()}`;
    t.model.script(modelName, [
      toolCallsReply([{ id: 'call_d', name: 'write_todos', args: { todos: [{ content: 'x' }] } }]),
      textReply('ok'),
    ]);
    const llm = t.llm(modelName);
    const approving = await invoke(b, token, {
      session_id: 'doomed',
      message: 'Plan',
      hitl_config: {},
      ...(llm ? { llm_config: llm } : {}),
    });
    const request = (await approving.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    await call(a, token, 'POST', `/api/agent/approvals/${request.request_id}/decision`, {
      decision: 'reject',
      message: 'not now',
    });
    await approving.ended;
    if (t.sql) {
      await t.sql(
        `INSERT INTO session_sandboxes (session_id, user_id, provider, sandbox_id, state)
         VALUES ('doomed', $1, 'bwrap', 'sbx-doomed', 'paused')`,
        [user],
      );
    }
    // A run still going when the delete comes, held by the other replica.
    const held = await heldRun(t, a, token, 'doomed');
    const runIds = t.sql
      ? (
          await t.sql<{ run_id: string }>(
            `SELECT run_id FROM agent_runs WHERE user_id = $1 AND session_id = 'doomed'`,
            [user],
          )
        ).map((r) => r.run_id)
      : [];
    /** Keys naming the session or one of its runs. */
    const sessionKeys = async () =>
      (await t.redisKeys!()).filter(
        (key) => key.includes('doomed') || runIds.some((runId) => key.includes(runId)),
      );
    if (t.redisKeys) {
      expect(runIds).toHaveLength(3);
      // Each run's events are in the run log (to resume its stream), and the run holds the lease.
      const before = await sessionKeys();
      for (const runId of runIds) expect(before).toContainEqual(expect.stringContaining(runId));
      expect(before).toContainEqual(expect.stringMatching(/session-lease:.*:doomed$/));
    }
    const deleted = await call(b, token, 'DELETE', path('doomed'));
    expect(deleted.status).toBe(204);
    const ended = await held.stream.ended;
    expect(ended.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
    held.release();

    for (const route of [path('doomed'), path('doomed', '/messages')]) {
      expect((await call(a, token, 'GET', route)).status).toBe(404);
    }
    expect((await call(b, token, 'DELETE', path('doomed'))).status).toBe(404);
    const listed = await call<SessionList>(a, token, 'GET', '/api/agent/sessions');
    expect(listed.body.sessions).toEqual([]);
    if (t.sql) {
      const tables = await t.sql<{ table_name: string }>(
        `SELECT table_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND column_name = 'session_id'`,
      );
      expect(tables.map((r) => r.table_name).sort()).toEqual([
        'agent_approvals',
        'agent_messages',
        'agent_runs',
        'agent_sessions',
        'session_sandboxes',
      ]);
      for (const { table_name: table } of tables) {
        const rows = await t.sql(`SELECT 1 FROM ${table} WHERE session_id = 'doomed'`);
        expect({ table, rows: rows.length }).toEqual({ table, rows: 0 });
      }
    }
    if (t.redisKeys) expect(await sessionKeys()).toEqual([]);
    // The id can be used again: a new, empty session.
    await turn(t, b, token, 'doomed', 'Fresh start', 'Hello');
    const fresh = await call<MessageList>(a, token, 'GET', path('doomed', '/messages'));
    expect(fresh.body.messages).toHaveLength(2);
  });

  it('reads a run and cancels it from a replica that does not run it', async () => {
    const t = target();
    const [a, b] = t.urls;
    const token = await t.token(`canceller-${randomUUID()}`);
    const held = await heldRun(t, a, token, 'long-one');
    const running = await call<AgentRun>(b, token, 'GET', `/api/agent/runs/${held.runId}`);
    expect(running.body).toMatchObject({ status: 'running', ended_at: null, error: null });
    const listed = await call<SessionList>(b, token, 'GET', '/api/agent/sessions');
    expect(listed.body.sessions[0]).toMatchObject({
      session_id: 'long-one',
      active_run_id: held.runId,
    });

    const cancelled = await call<AgentRun>(
      b,
      token,
      'POST',
      `/api/agent/runs/${held.runId}/cancel`,
    );
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({
      run_id: held.runId,
      session_id: 'long-one',
      status: 'aborted',
      error: { code: 'run_aborted' },
      ended_at: expect.stringMatching(/Z$/),
    });
    const events = await held.stream.ended;
    expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
    // The model request was stopped, not left to finish.
    const [request] = t.model.requests(held.modelName);
    await t.model.waitForAbort(request!);
    held.release();
    // Cancelling an ended run changes nothing.
    const again = await call<AgentRun>(a, token, 'POST', `/api/agent/runs/${held.runId}/cancel`);
    expect(again.body).toEqual(cancelled.body);
    // The session is free for the next run.
    await turn(t, b, token, 'long-one', 'Again', 'Sure');
  });

  it('stores the usage the model reports per run, sends it in done, and sums it by day', async () => {
    const t = target();
    const [a, b] = t.urls;
    const token = await t.token(`usage-${randomUUID()}`);
    const empty = await call<UsageReport>(a, token, 'GET', '/api/usage');
    expect(empty.body.total).toEqual({ runs: 0, prompt_tokens: 0, completion_tokens: 0 });

    const modelName = `m-${randomUUID()}`;
    const args = { todos: [{ content: 'Count tokens' }] };
    t.model.script(modelName, [
      toolCallsReply([{ id: 'call_u', name: 'write_todos', args }], { text: 'Sure.' }),
      textReply('Counted.', 2),
    ]);
    const llm = t.llm(modelName);
    const stream = await invoke(a, token, {
      session_id: 'metered',
      message: 'Count',
      ...(llm ? { llm_config: llm } : {}),
    });
    const events = await stream.ended;
    // The scripted model reports characters as tokens: the prompt it got, the answer it sent.
    const requests = t.model.requests(modelName);
    expect(requests).toHaveLength(2);
    const first = {
      prompt_tokens: requests.reduce((sum, r) => sum + JSON.stringify(r.body.messages).length, 0),
      completion_tokens: 'Sure.'.length + JSON.stringify(args).length + 'Counted.'.length,
    };
    expect(events.at(-1)!.data).toEqual({ type: 'done', session_id: 'metered', usage: first });
    const runId = events[0]!.data.run_id as string;
    const run = await call<AgentRun>(b, token, 'GET', `/api/agent/runs/${runId}`);
    expect(run.body).toMatchObject({ status: 'done', error: null, usage: first });

    const second = await turn(t, b, token, 'metered', 'Again', 'Done again');
    const secondUsage = (second.at(-1)!.data as unknown as { usage: typeof first }).usage;
    expect(secondUsage.completion_tokens).toBe('Done again'.length);
    const today = new Date().toISOString().slice(0, 10);
    const report = await call<UsageReport>(a, token, 'GET', `/api/usage?from=${today}&to=${today}`);
    const total = {
      runs: 2,
      prompt_tokens: first.prompt_tokens + secondUsage.prompt_tokens,
      completion_tokens: first.completion_tokens + secondUsage.completion_tokens,
    };
    expect(report.body).toEqual({
      from: today,
      to: today,
      days: [{ date: today, ...total }],
      total,
      // No daily token budget is set here (docs/limits.md#token-budgets).
      budget: null,
    } satisfies UsageReport);
    // Another user sees none of it.
    const other = await call<UsageReport>(
      b,
      await t.token(`usage-other-${randomUUID()}`),
      'GET',
      '/api/usage',
    );
    expect(other.body.days).toEqual([]);
    const bad = await call<{ error: { code: string; details: unknown } }>(
      a,
      token,
      'GET',
      '/api/usage?from=2026-02-30',
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', details: [{ path: 'from' }] });
  });
}

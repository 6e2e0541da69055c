import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequestEvent } from '@agent-backend/protocol';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import {
  invoke,
  startAgentCluster,
  type AgentCluster,
  type SseClient,
  type SseEvent,
} from './agent-helpers.js';

/** Body of a decision answer (success or error). */
interface Answer {
  status: number;
  body: { error: { code: string; details?: unknown }; [key: string]: unknown };
}

async function decide(
  baseUrl: string,
  token: string,
  requestId: string,
  body: unknown,
): Promise<Answer> {
  const response = await fetch(
    `${baseUrl}/api/agent/approvals/${encodeURIComponent(requestId)}/decision`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    },
  );
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** `POST /api/agent/runs/:run_id/decisions`. */
async function decideMany(
  baseUrl: string,
  token: string,
  runId: string,
  decisions: unknown[],
): Promise<Answer> {
  const response = await fetch(`${baseUrl}/api/agent/runs/${encodeURIComponent(runId)}/decisions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ decisions }),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

const todos = (content: string) => ({ todos: [{ content }] });
const isType = (type: string) => (e: SseEvent) => e.data.type === type;
/** The `n`-th (from 0) approval request of a stream. */
const nthApproval = (stream: SseClient, n: number) =>
  stream
    .waitFor(() => stream.events.filter(isType('approval_request')).length > n)
    .then(
      () =>
        stream.events.filter(isType('approval_request'))[n]!
          .data as unknown as ApprovalRequestEvent,
    );

/**
 * HITL approval across two real API replicas (Redis + PostgreSQL) and a scripted model: the
 * stream is held on one replica and every decision is posted to the other.
 */
describe('agent HITL: approval of tool calls across replicas', () => {
  let cluster: AgentCluster;
  let alice: string;
  let bob: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-hitl-secret-77ab',
    modelName,
  });
  const url = (i: 0 | 1) => cluster.api[i]!.url;

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      AGENT_SESSION_LEASE_MS: '1500',
      // Takeovers off: a dead replica's approvals are orphaned. With takeovers (and a worker)
      // they are decided later: tests/agent-durable.test.ts.
      AGENT_TAKEOVER: 'false',
    });
    alice = await cluster.token('alice');
    bob = await cluster.token('bob');
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('holds a call, takes an edit on the other replica and runs the edited arguments', async () => {
    cluster.model.script('m-edit', [
      toolCallsReply([{ id: 'call_e', name: 'write_todos', args: todos('Delete the database') }]),
      textReply('Done.', 1),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'Plan it',
      llm_config: llm('m-edit'),
      hitl_config: {},
    });
    const request = await nthApproval(stream, 0);
    expect(request).toMatchObject({
      tool_call_id: 'call_e',
      tool_name: 'write_todos',
      tool_args: todos('Delete the database'),
      allowed_decisions: ['approve', 'edit', 'reject'],
    });
    const expires = Date.parse(request.expires_at);
    expect(expires - Date.now()).toBeGreaterThan(30_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(60_000);
    // Nothing ran while it waits.
    expect(stream.events.some(isType('todos'))).toBe(false);

    const edited = await decide(url(1), alice, request.request_id, {
      decision: 'edit',
      tool_args: todos('Back up the database'),
    });
    expect(edited).toEqual({
      status: 200,
      body: { request_id: request.request_id, decision: 'edit', status: 'accepted' },
    });
    const events = await stream.ended;
    expect(events.map((e) => e.data.type)).toEqual([
      'session',
      'tool_call',
      'approval_request',
      'approval_result',
      'todos',
      'tool_result',
      'message_chunk',
      'done',
    ]);
    expect(events.find(isType('approval_result'))!.data).toMatchObject({
      outcome: 'edited',
      tool_args: todos('Back up the database'),
    });
    expect(events.find(isType('todos'))!.data.todos).toEqual([
      { content: 'Back up the database', status: 'pending' },
    ]);
    const [, second] = cluster.model.requests('m-edit');
    const toolMessage = second!.body.messages!.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ tool_call_id: 'call_e' });
    expect(toolMessage!.content).toContain('Back up the database');
    // A second decision on the same request is refused.
    const again = await decide(url(0), alice, request.request_id, { decision: 'approve' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: 'approval_closed',
      details: { outcome: 'edited' },
    });
  });

  it('refuses other users (404), disallowed decisions and bad edits (400), keeping it open', async () => {
    cluster.model.script('m-guard', [
      toolCallsReply([{ id: 'call_g', name: 'write_todos', args: todos('Pay the invoice') }]),
      textReply('Ok.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'Pay',
      llm_config: llm('m-guard'),
      hitl_config: { tools: { write_todos: { allowed_decisions: ['approve', 'reject'] } } },
    });
    const request = await nthApproval(stream, 0);
    expect(request.allowed_decisions).toEqual(['approve', 'reject']);
    const foreign: Answer = await decide(url(1), bob, request.request_id, { decision: 'approve' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    const unknown = await decide(url(1), alice, 'apr_does_not_exist', { decision: 'approve' });
    expect(unknown.status).toBe(404);
    const notAllowed = await decide(url(1), alice, request.request_id, {
      decision: 'edit',
      tool_args: todos('x'),
    });
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.body.error).toMatchObject({
      code: 'decision_not_allowed',
      details: { allowed_decisions: ['approve', 'reject'] },
    });
    const invalid = await decide(url(1), alice, request.request_id, { decision: 'maybe' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('invalid_request');

    const rejected = await decide(url(1), alice, request.request_id, {
      decision: 'reject',
      message: 'not this month',
    });
    expect(rejected.status).toBe(200);
    const events = await stream.ended;
    expect(events.find(isType('approval_result'))!.data).toMatchObject({
      outcome: 'rejected',
      message: 'not this month',
    });
    expect(events.some(isType('todos'))).toBe(false);
    expect(events.find(isType('tool_result'))!.data).toMatchObject({ is_error: true });
    const [, second] = cluster.model.requests('m-guard');
    const toolMessage = second!.body.messages!.find((m) => m.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe('call_g');
    expect(toolMessage.content).toContain('rejected');
    expect(toolMessage.content).toContain('not this month');
    expect(events.at(-1)!.data.type).toBe('done');
  });

  it('checks edited arguments against the tool schema with field errors', async () => {
    cluster.model.script('m-schema', [
      toolCallsReply([{ id: 'call_s', name: 'write_todos', args: todos('Call Bo') }]),
      textReply('Ok.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'x',
      llm_config: llm('m-schema'),
      hitl_config: {},
    });
    const request = await nthApproval(stream, 0);
    const bad = await decide(url(1), alice, request.request_id, {
      decision: 'edit',
      tool_args: { todos: [{ content: 42 }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    expect(bad.body.error.details).toEqual([
      expect.objectContaining({ path: 'tool_args.todos.0.content' }),
    ]);
    expect((await decide(url(1), alice, request.request_id, { decision: 'approve' })).status).toBe(
      200,
    );
    const events = await stream.ended;
    expect(events.find(isType('todos'))!.data.todos).toEqual([
      { content: 'Call Bo', status: 'pending' },
    ]);
  });

  it('treats no decision within the timeout as a rejection and refuses late decisions', async () => {
    cluster.model.script('m-timeout', [
      toolCallsReply([{ id: 'call_t', name: 'write_todos', args: todos('Wait') }]),
      textReply('Understood.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'x',
      llm_config: llm('m-timeout'),
      hitl_config: { default_timeout: 1 },
    });
    const request = await nthApproval(stream, 0);
    const events = await stream.ended;
    expect(events.find(isType('approval_result'))!.data).toMatchObject({
      request_id: request.request_id,
      outcome: 'timed_out',
    });
    expect(events.some(isType('todos'))).toBe(false);
    const [, second] = cluster.model.requests('m-timeout');
    const toolMessage = second!.body.messages!.find((m) => m.role === 'tool')!;
    expect(toolMessage.tool_call_id).toBe('call_t');
    expect(toolMessage.content).toContain('not approved');
    const late = await decide(url(1), alice, request.request_id, { decision: 'approve' });
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({
      code: 'approval_closed',
      details: { outcome: 'timed_out' },
    });
  });

  it('never interrupts allowlisted, disabled or non-interrupting tools; overrides the default', async () => {
    const configs = [
      { allowlist: ['write_todos'], tools: { write_todos: { requires_interrupt: true } } },
      { tools: { write_todos: { enabled: false } } },
      { tools: { write_todos: { requires_interrupt: false } } },
      { default_requires_interrupt: false },
    ];
    for (const [i, hitl_config] of configs.entries()) {
      cluster.model.script(`m-free-${i}`, [
        toolCallsReply([{ name: 'write_todos', args: todos(`free ${i}`) }]),
        textReply('Ok.'),
      ]);
      const events = await (
        await invoke(url(0), alice, { message: 'x', llm_config: llm(`m-free-${i}`), hitl_config })
      ).ended;
      expect(events.some(isType('approval_request'))).toBe(false);
      expect(events.find(isType('todos'))!.data.todos).toEqual([
        { content: `free ${i}`, status: 'pending' },
      ]);
    }
    cluster.model.script('m-override', [
      toolCallsReply([{ name: 'write_todos', args: todos('held') }]),
      textReply('Ok.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'x',
      llm_config: llm('m-override'),
      hitl_config: {
        default_requires_interrupt: false,
        tools: { write_todos: { requires_interrupt: true, timeout: 120 } },
      },
    });
    const request = await nthApproval(stream, 0);
    expect(Date.parse(request.expires_at) - Date.now()).toBeGreaterThan(90_000);
    expect((await decide(url(1), alice, request.request_id, { decision: 'approve' })).status).toBe(
      200,
    );
    expect((await stream.ended).at(-1)!.data.type).toBe('done');
  });

  it('announces every held call of a turn at once and takes their decisions in any order, on either replica', async () => {
    cluster.model.script('m-parallel', [
      toolCallsReply([
        { id: 'call_1', name: 'write_todos', args: todos('one') },
        { id: 'call_2', name: 'write_todos', args: todos('two') },
        { id: 'call_3', name: 'write_todos', args: todos('three') },
      ]),
      textReply('All handled.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'x',
      llm_config: llm('m-parallel'),
      hitl_config: {},
    });
    // All three are held together, before any decision.
    await nthApproval(stream, 2);
    const requests = stream.events
      .filter(isType('approval_request'))
      .map((e) => e.data as unknown as ApprovalRequestEvent);
    expect(requests.map((r) => r.tool_call_id).sort()).toEqual(['call_1', 'call_2', 'call_3']);
    expect(new Set(requests.map((r) => r.request_id)).size).toBe(3);
    const requestOf = (id: string) => requests.find((r) => r.tool_call_id === id)!.request_id;
    const runId = stream.events.find(isType('session'))!.data.run_id as string;

    // The last call first, on the other replica, alone; then the other two.
    expect((await decide(url(1), alice, requestOf('call_3'), { decision: 'approve' })).status).toBe(
      200,
    );
    await stream.waitFor((e) => e.data.type === 'tool_result' && e.data.tool_call_id === 'call_3');
    expect(
      stream.events.some(
        (e) => e.data.type === 'approval_result' && e.data.tool_call_id !== 'call_3',
      ),
    ).toBe(false);
    const batch = await decideMany(url(0), alice, runId, [
      { request_id: requestOf('call_2'), decision: 'edit', tool_args: todos('two, edited') },
      { request_id: requestOf('call_1'), decision: 'reject', message: 'not one' },
    ]);
    expect(batch).toEqual({
      status: 200,
      body: {
        run_id: runId,
        decisions: [
          { request_id: requestOf('call_2'), decision: 'edit', status: 'accepted' },
          { request_id: requestOf('call_1'), decision: 'reject', status: 'accepted' },
        ],
      },
    });
    const events = await stream.ended;
    expect(
      Object.fromEntries(
        events.filter(isType('approval_result')).map((e) => [e.data.tool_call_id, e.data.outcome]),
      ),
    ).toEqual({ call_1: 'rejected', call_2: 'edited', call_3: 'approved' });
    expect(
      events
        .filter(isType('todos'))
        .map((e) => (e.data.todos as Array<{ content: string }>)[0]!.content)
        .sort(),
    ).toEqual(['three', 'two, edited']);
    const modelRequests = cluster.model.requests('m-parallel');
    expect(modelRequests).toHaveLength(2);
    const messages = modelRequests[1]!.body.messages!;
    const assistant = messages.findIndex((m) => Array.isArray(m.tool_calls));
    const calls = (messages[assistant]!.tool_calls as Array<{ id: string }>).map((c) => c.id);
    expect(calls).toEqual(['call_1', 'call_2', 'call_3']);
    // The model's order, not the order of the decisions.
    const toolMessages = messages.slice(assistant + 1, assistant + 4);
    expect(toolMessages.map((m) => [m.role, m.tool_call_id])).toEqual([
      ['tool', 'call_1'],
      ['tool', 'call_2'],
      ['tool', 'call_3'],
    ]);
    expect(toolMessages[0]!.content).toContain('not one');
    expect(events.at(-1)!.data.type).toBe('done');

    // Decided already: the whole batch is refused, naming the first closed one.
    const late = await decideMany(url(1), alice, runId, [
      { request_id: requestOf('call_3'), decision: 'approve' },
    ]);
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({
      code: 'approval_closed',
      details: { index: 0, request_id: requestOf('call_3'), outcome: 'approved' },
    });
  });

  it('validates a batch of decisions whole: one refused decision takes none of them', async () => {
    cluster.model.script('m-batch', [
      toolCallsReply([
        { id: 'call_a', name: 'write_todos', args: todos('a') },
        { id: 'call_b', name: 'write_todos', args: todos('b') },
      ]),
      textReply('Ok.'),
    ]);
    const stream = await invoke(url(0), alice, {
      message: 'x',
      llm_config: llm('m-batch'),
      hitl_config: { tools: { write_todos: { allowed_decisions: ['approve', 'edit'] } } },
    });
    await nthApproval(stream, 1);
    const [a, b] = ['call_a', 'call_b'].map(
      (id) =>
        stream.events.find((e) => e.data.type === 'approval_request' && e.data.tool_call_id === id)!
          .data.request_id as string,
    );
    const runId = stream.events.find(isType('session'))!.data.run_id as string;
    const refusals: Array<[Answer, number, string, unknown]> = [
      [
        await decideMany(url(1), alice, runId, [
          { request_id: a, decision: 'approve' },
          { request_id: b, decision: 'edit', tool_args: { todos: [{ content: 7 }] } },
        ]),
        400,
        'invalid_request',
        [expect.objectContaining({ path: 'decisions.1.tool_args.todos.0.content' })],
      ],
      [
        await decideMany(url(1), alice, runId, [
          { request_id: a, decision: 'approve' },
          { request_id: b, decision: 'reject' },
        ]),
        400,
        'decision_not_allowed',
        { index: 1, request_id: b, allowed_decisions: ['approve', 'edit'] },
      ],
      [
        await decideMany(url(0), alice, runId, [
          { request_id: a, decision: 'approve' },
          { request_id: 'apr_does_not_exist', decision: 'approve' },
        ]),
        404,
        'not_found',
        { index: 1, request_id: 'apr_does_not_exist' },
      ],
      [
        await decideMany(url(0), alice, 'run_of_someone_else', [
          { request_id: a, decision: 'approve' },
        ]),
        404,
        'not_found',
        { index: 0, request_id: a },
      ],
      [
        await decideMany(url(0), bob, runId, [{ request_id: a, decision: 'approve' }]),
        404,
        'not_found',
        { index: 0, request_id: a },
      ],
      [
        await decideMany(url(0), alice, runId, [
          { request_id: a, decision: 'approve' },
          { request_id: a, decision: 'approve' },
        ]),
        400,
        'invalid_request',
        [expect.objectContaining({ path: 'decisions.1.request_id' })],
      ],
    ];
    for (const [answer, status, code, details] of refusals) {
      expect(answer.status).toBe(status);
      expect(answer.body.error).toMatchObject({ code, details });
    }
    // Nothing was taken: both are still open and take the next valid batch.
    expect(stream.events.some(isType('approval_result'))).toBe(false);
    const ok = await decideMany(url(1), alice, runId, [
      { request_id: b, decision: 'edit', tool_args: todos('b, edited') },
      { request_id: a, decision: 'approve' },
    ]);
    expect(ok.status).toBe(200);
    const events = await stream.ended;
    expect(
      events
        .filter(isType('approval_result'))
        .map((e) => e.data.outcome)
        .sort(),
    ).toEqual(['approved', 'edited']);
    expect(events.at(-1)!.data.type).toBe('done');
  });

  it('records a dead replica’s run as aborted when the session is used again, even if nobody decided', async () => {
    const doomed = await cluster.startReplica('api-doomed-2');
    cluster.model.script('m-dead-2', [
      toolCallsReply([{ id: 'call_e', name: 'write_todos', args: todos('never decided') }]),
    ]);
    const stream = await invoke(doomed.url, alice, {
      message: 'x',
      llm_config: llm('m-dead-2'),
      hitl_config: {},
    });
    await nthApproval(stream, 0);
    const sessionId = stream.events.find((e) => e.data.type === 'session')!.data
      .session_id as string;
    await doomed.stop('SIGKILL');
    await new Promise((r) => setTimeout(r, 3_000));
    cluster.model.script('m-dead-2', [textReply('fresh start')]);
    const next = await invoke(url(1), alice, {
      message: 'again',
      session_id: sessionId,
      llm_config: llm('m-dead-2'),
    });
    expect((await next.ended).at(-1)!.data.type).toBe('done');
    const runs = await cluster.sql<{ status: string; error_code: string | null }>(
      'SELECT status, error_code FROM agent_runs WHERE session_id = $1 ORDER BY started_at',
      [sessionId],
    );
    expect(runs).toEqual([
      { status: 'aborted', error_code: 'replica_lost' },
      { status: 'done', error_code: null },
    ]);
  });

  it('answers decisions on approvals of a dead replica with 409 approval_orphaned', async () => {
    const doomed = await cluster.startReplica('api-doomed');
    cluster.model.script('m-dead', [
      toolCallsReply([{ id: 'call_d', name: 'write_todos', args: todos('orphan') }]),
    ]);
    const stream = await invoke(doomed.url, alice, {
      message: 'x',
      llm_config: llm('m-dead'),
      hitl_config: {},
    });
    const request = await nthApproval(stream, 0);
    await doomed.stop('SIGKILL');
    // The holder's session lease (1.5 s here) must lapse before the loss can be seen.
    await new Promise((r) => setTimeout(r, 3_000));
    const answer: Answer = await decide(url(1), alice, request.request_id, { decision: 'approve' });
    expect(answer.status).toBe(409);
    expect(answer.body.error).toMatchObject({
      code: 'approval_orphaned',
      details: { outcome: 'orphaned' },
    });
    const again = await decide(url(0), alice, request.request_id, { decision: 'reject' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('approval_orphaned');
    // The session records what happened to the run that asked.
    const sessionId = stream.events.find((e) => e.data.type === 'session')!.data.session_id;
    const runs = await cluster.sql(
      'SELECT status, error_code FROM agent_runs WHERE session_id = $1',
      [sessionId],
    );
    expect(runs).toEqual([{ status: 'aborted', error_code: 'replica_lost' }]);
    expect(cluster.logs()).not.toContain('sk-hitl-secret-77ab');
  });
});

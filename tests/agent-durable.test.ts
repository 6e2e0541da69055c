/**
 * Runs that outlive a replica, on two API replicas and a worker over PostgreSQL and Redis: a
 * listening client's stream unchanged, approvals decided after the client left and the asking
 * replica stopped, an approval's timeout with no replica holding the run, background runs joined
 * from any replica, a drain that suspends a waiting run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequestEvent } from '@agent-backend/protocol';
import { textReply, toolCallsReply, type ServiceProcess } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster, type SseEvent } from './agent-helpers.js';
import { eventually, invokeBackground, joinRun, seqs, startWorker } from './durable-helpers.js';

const todos = (content: string) => ({ todos: [{ content }] });
const isType = (type: string) => (e: SseEvent) => e.data.type === type;

async function decide(baseUrl: string, token: string, requestId: string, decision: string) {
  const response = await fetch(`${baseUrl}/api/agent/approvals/${requestId}/decision`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ decision }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('durable runs across API replicas and a worker', () => {
  let cluster: AgentCluster;
  let worker: ServiceProcess;
  let token: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-durable-secret-31',
    modelName,
  });
  const url = (i: number) => cluster.api[i]!.url;
  const runStatus = (runId: string) => cluster.runStatus(runId);

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      AGENT_SESSION_LEASE_MS: '1500',
      AGENT_DISCONNECT_GRACE_MS: '300',
      AGENT_TAKEOVER_CHECK_MS: '300',
      SHUTDOWN_TIMEOUT_MS: '20000',
    });
    worker = await startWorker(cluster.env, 'worker-1');
    token = await cluster.token('dora');
  });
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await cluster?.stop();
  });

  it("keeps a listening client's stream as today while the approval waits (AGENT_SUSPEND_AFTER_MS unset)", async () => {
    cluster.model.script('d-listen', [
      toolCallsReply([{ id: 'call_l', name: 'write_todos', args: todos('Listen') }]),
      textReply('Listened.'),
    ]);
    const stream = await invoke(url(0), token, {
      message: 'go',
      llm_config: llm('d-listen'),
      hitl_config: {},
    });
    const request = (await stream.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    // Longer than the disconnect grace: a client that listens keeps the run held.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await runStatus(String(stream.events[0]!.data.run_id))).toBe('running');
    expect((await decide(url(1), token, request.request_id, 'approve')).status).toBe(200);
    const events = await stream.ended;
    expect(events.map((e) => e.data.type)).toEqual([
      'session',
      'tool_call',
      'approval_request',
      'approval_result',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(seqs(events)).toEqual(events.map((_, i) => i + 1));
  });

  it('takes a decision after the client left and the asking replica stopped; the run ends on the worker', async () => {
    cluster.model.script('d-left', [
      toolCallsReply([{ id: 'call_a', name: 'write_todos', args: todos('Later') }]),
      textReply('Approved later.'),
    ]);
    const extra = await cluster.startReplica('api-left');
    const stream = await invoke(extra.url, token, {
      message: 'go',
      llm_config: llm('d-left'),
      hitl_config: { default_timeout: 3600 },
    });
    const runId = String((await stream.waitFor(isType('session'))).data.run_id);
    const request = (await stream.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    const seen = [...stream.events];
    stream.close();
    await eventually(async () => (await runStatus(runId)) === 'suspended');
    await extra.stop('SIGTERM');

    expect(await decide(url(1), token, request.request_id, 'approve')).toMatchObject({
      status: 200,
    });
    await eventually(async () => (await runStatus(runId)) === 'done');
    const rejoined = await joinRun(url(0), token, runId, seen.at(-1)!.id);
    const rest = await rejoined.ended;
    expect(rest.map((e) => e.data.type)).toEqual([
      'suspended',
      'approval_result',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(rest[0]!.data).toMatchObject({
      run_id: runId,
      approvals: [
        { request_id: request.request_id, tool_call_id: 'call_a', tool_name: 'write_todos' },
      ],
    });
    // One stream: no event id repeats or is skipped across the hand-over.
    expect(seqs([...seen, ...rest])).toEqual([...seen, ...rest].map((_, i) => i + 1));
    // The tool ran once, and the model saw its result.
    expect(rest.filter(isType('todos'))).toHaveLength(1);
    const second = cluster.model.requests('d-left')[1]!;
    expect(second.body.messages!.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_a' });
    const stored = await cluster.sql<{ outcome: string }>(
      'SELECT outcome FROM agent_approvals WHERE request_id = $1',
      [request.request_id],
    );
    expect(stored).toEqual([{ outcome: 'approved' }]);
  });

  it('times an approval out from a delayed job while no replica holds the run', async () => {
    cluster.model.script('d-timeout', [
      toolCallsReply([{ id: 'call_t', name: 'write_todos', args: todos('Never') }]),
      textReply('Nobody answered.'),
    ]);
    const stream = await invoke(url(0), token, {
      message: 'go',
      llm_config: llm('d-timeout'),
      hitl_config: { default_timeout: 2 },
    });
    const runId = String((await stream.waitFor(isType('session'))).data.run_id);
    await stream.waitFor(isType('approval_request'));
    stream.close();
    await eventually(async () => (await runStatus(runId)) === 'suspended');
    await eventually(async () => (await runStatus(runId)) === 'done');
    const all = await (await joinRun(url(1), token, runId)).ended;
    expect(all.find(isType('approval_result'))!.data).toMatchObject({ outcome: 'timed_out' });
    expect(all.some(isType('todos'))).toBe(false);
    const second = cluster.model.requests('d-timeout')[1]!;
    expect(String(second.body.messages!.at(-1)!.content)).toContain(
      'No approval arrived within 2 s',
    );
  });

  it('runs a background run on the worker; its stream is joined, left and rejoined from either replica', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('d-bg', [
      {
        kind: 'stream',
        pieces: [
          { text: 'First half, ' },
          { waitFor: gate },
          { text: 'second half.' },
          { finish: 'stop' },
        ],
      },
    ]);
    const accepted = await invokeBackground(url(0), token, {
      message: 'go',
      llm_config: llm('d-bg'),
    });
    expect(accepted.status).toBe(202);
    const { run_id: runId, session_id: sessionId } = accepted.body;
    expect(runId).toMatch(/^run_/);
    const first = await joinRun(url(1), token, runId);
    await first.waitFor(isType('message_chunk'));
    const seen = [...first.events];
    first.close();
    release();
    const second = await joinRun(url(0), token, runId, seen.at(-1)!.id);
    const rest = await second.ended;
    expect([...seen, ...rest].map((e) => e.data.type)).toEqual([
      'session',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(seqs([...seen, ...rest])).toEqual([1, 2, 3, 4]);
    expect(rest.at(-1)!.data).toMatchObject({ type: 'done', session_id: sessionId });
    expect(cluster.logs()).not.toContain('sk-durable-secret-31');
    expect(worker.stdout.join('\n')).toContain(runId);
    // The run's settings (the model key) are not kept once it ended.
    const [row] = await cluster.sql<{ request: unknown; background: boolean }>(
      'SELECT request, background FROM agent_runs WHERE run_id = $1',
      [runId],
    );
    expect(row).toEqual({ request: null, background: true });
  });

  it('suspends a waiting run when its replica drains instead of waiting out the approval', async () => {
    cluster.model.script('d-drain', [
      toolCallsReply([{ id: 'call_d', name: 'write_todos', args: todos('After the drain') }]),
      textReply('Resumed after the drain.'),
    ]);
    const extra = await cluster.startReplica('api-drain');
    const stream = await invoke(extra.url, token, {
      message: 'go',
      llm_config: llm('d-drain'),
      hitl_config: { default_timeout: 3600 },
    });
    const runId = String((await stream.waitFor(isType('session'))).data.run_id);
    const request = (await stream.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    // SIGTERM: the replica lets go of the run at once (its approval would wait an hour).
    await extra.stop('SIGTERM');
    const ended = await stream.ended;
    // No `suspended` for a client that may only know the spec's events: the stream just ends.
    expect(ended.some(isType('suspended'))).toBe(false);
    expect(await runStatus(runId)).toBe('suspended');
    expect((await decide(url(0), token, request.request_id, 'approve')).status).toBe(200);
    await eventually(async () => (await runStatus(runId)) === 'done');
    const rest = await (await joinRun(url(1), token, runId, ended.at(-1)!.id)).ended;
    expect(rest.map((e) => e.data.type)).toContain('done');
    expect(seqs([...ended, ...rest])).toEqual([...ended, ...rest].map((_, i) => i + 1));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient, type ToolContext } from '@agent-backend/node-client';
import type { ApprovalRequestEvent } from '@agent-backend/protocol';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type RecordedRequest,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke, resume, type SseClient, type SseEvent } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';

/**
 * Parallel tool calls through invoke: two API replicas, two gateways, the scripted model, and
 * simulated devices (the node client library) whose tools finish when the test says so.
 */

/** A promise and its resolver. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves once `condition` holds, checked every 10 ms; rejects after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Tool calls the laptop holds until the test finishes them, by their `key` argument. */
class HeldCalls {
  readonly arrived: string[] = [];
  private readonly waiting = new Map<string, ReturnType<typeof deferred<string>>>();

  handle(key: string, context: ToolContext): Promise<string> {
    this.arrived.push(key);
    if (key.startsWith('free')) return Promise.resolve(`read ${key}`);
    const answer = deferred<string>();
    this.waiting.set(key, answer);
    context.signal.addEventListener('abort', () => answer.resolve('aborted'), { once: true });
    return answer.promise;
  }

  finish(key: string): void {
    this.waiting.get(key)!.resolve(`read ${key}`);
    this.waiting.delete(key);
  }

  finishAll(): void {
    for (const key of [...this.waiting.keys()]) this.finish(key);
  }
}

const isType = (type: string) => (e: SseEvent) => e.data.type === type;
const resultOf = (stream: SseClient, callId: string) =>
  stream.waitFor((e) => e.data.type === 'tool_result' && e.data.tool_call_id === callId);
const resultOrder = (events: SseEvent[]) =>
  events.filter(isType('tool_result')).map((e) => e.data.tool_call_id);

/** The tool messages right after the assistant message that made `callIds`, in stored order. */
function toolMessagesAfter(request: RecordedRequest, callIds: string[]) {
  const messages = request.body.messages!;
  const at = messages.findIndex(
    (m) =>
      Array.isArray(m.tool_calls) &&
      (m.tool_calls as Array<{ id: string }>).map((c) => c.id).join() === callIds.join(),
  );
  expect(at).toBeGreaterThanOrEqual(0);
  return messages
    .slice(at + 1, at + 1 + callIds.length)
    .map((m) => ({ role: m.role, tool_call_id: m.tool_call_id, content: m.content }));
}

describe('agent: parallel tool calls of one turn', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let token: string;
  const devices: NodeClient[] = [];
  const held = new HeldCalls();
  const notes: Array<Record<string, unknown>> = [];
  let phoneInFlight = 0;
  let phonePeak = 0;
  const llm = (modelName: string) => ({
    baseUrl: model.baseUrl,
    apiKey: 'sk-parallel',
    modelName,
  });
  const api = (i: 0 | 1) => cluster.apis[i]!.url;

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 2,
      apis: 2,
      env: {
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        AGENT_LLM_MAX_RETRIES: '0',
        // A client that drops stops its run at once (the abort test).
        AGENT_DISCONNECT_GRACE_MS: '0',
      },
    });
    token = await cluster.token('pia');
    const laptop = new NodeClient({
      url: cluster.gateways[0]!.url,
      kind: 'desktop',
      userId: 'pia',
      nodeId: 'laptop',
      token,
      node: { maxConcurrentTasks: 8 },
      tools: {
        slow_read: {
          description: 'Reads something slowly',
          writes: false,
          handler: (args, context) => held.handle(String(args.key), context),
        },
        note: {
          description: 'Writes a note',
          writes: true,
          handler: (args) => {
            notes.push(args);
            return `noted ${String(args.text)}`;
          },
        },
      },
    });
    // The phone takes two tasks at a time and answers busy (-32000) to a third.
    const phone = new NodeClient({
      url: cluster.gateways[1]!.url,
      kind: 'extension',
      userId: 'pia',
      nodeId: 'phone',
      token,
      node: { maxConcurrentTasks: 2 },
      tools: {
        fetch_page: {
          description: 'Fetches a page',
          writes: false,
          handler: async (args) => {
            phoneInFlight++;
            phonePeak = Math.max(phonePeak, phoneInFlight);
            // Finish once a second call runs beside this one (or after a second, alone).
            await until(() => phoneInFlight >= 2, 'two calls', 1_000).catch(() => undefined);
            await new Promise((resolve) => setTimeout(resolve, 20));
            phoneInFlight--;
            return `page ${String(args.n)}`;
          },
        },
      },
    });
    devices.push(laptop, phone);
    await Promise.all(devices.map((device) => device.start()));
  });
  afterAll(async () => {
    held.finishAll();
    await Promise.all(devices.map((device) => device.close()));
    await cluster?.stop();
    await model?.close();
  });

  it('runs three slow node tools at once, streams each result as it completes, stores them in the model’s order', async () => {
    model.script('p-slow', [
      toolCallsReply([
        { id: 'call_a', name: 'slow_read', args: { key: 'a' } },
        { id: 'call_b', name: 'slow_read', args: { key: 'b' } },
        { id: 'call_c', name: 'slow_read', args: { key: 'c' } },
      ]),
      textReply('Read all three.'),
    ]);
    const stream = await invoke(api(1), token, {
      message: 'Read a, b and c',
      llm_config: llm('p-slow'),
    });
    // All three reach the laptop before any of them finished.
    await until(() => ['a', 'b', 'c'].every((k) => held.arrived.includes(k)), 'three calls');
    expect(stream.events.some(isType('tool_result'))).toBe(false);
    held.finish('c');
    await resultOf(stream, 'call_c');
    held.finish('a');
    await resultOf(stream, 'call_a');
    held.finish('b');
    const events = await stream.ended;
    expect(events.filter(isType('tool_call')).map((e) => e.data.tool_call_id)).toEqual([
      'call_a',
      'call_b',
      'call_c',
    ]);
    expect(resultOrder(events)).toEqual(['call_c', 'call_a', 'call_b']);
    expect(events.at(-1)!.data.type).toBe('done');
    const expected = ['a', 'b', 'c'].map((k) => ({
      role: 'tool',
      tool_call_id: `call_${k}`,
      content: `read ${k}`,
    }));
    const ids = ['call_a', 'call_b', 'call_c'];
    expect(toolMessagesAfter(model.requests('p-slow')[1]!, ids)).toEqual(expected);

    // The stored conversation, read back by the next run on the other replica, has that order.
    const sessionId = events.find(isType('session'))!.data.session_id as string;
    model.script('p-slow', [textReply('Anything else?')]);
    const next = await invoke(api(0), token, {
      message: 'Thanks',
      session_id: sessionId,
      llm_config: llm('p-slow'),
    });
    expect((await next.ended).at(-1)!.data.type).toBe('done');
    expect(toolMessagesAfter(model.requests('p-slow')[2]!, ids)).toEqual(expected);
  });

  it('keeps a run’s calls to one node within its max_concurrent_tasks', async () => {
    const calls = [1, 2, 3, 4].map((n) => ({ id: `call_${n}`, name: 'fetch_page', args: { n } }));
    model.script('p-limit', [toolCallsReply(calls), textReply('Fetched.')]);
    const events = await (
      await invoke(api(0), token, { message: 'Fetch four pages', llm_config: llm('p-limit') })
    ).ended;
    expect(events.at(-1)!.data.type).toBe('done');
    // Two at a time: none was refused as busy, and two did run side by side.
    const results = events.filter(isType('tool_result')).map((e) => e.data);
    expect(results.map((r) => [r.tool_call_id, r.result, r.is_error]).sort()).toEqual([
      ['call_1', 'page 1', undefined],
      ['call_2', 'page 2', undefined],
      ['call_3', 'page 3', undefined],
      ['call_4', 'page 4', undefined],
    ]);
    expect(phonePeak).toBe(2);
  });

  it('holds a turn’s calls together: mixed decisions on two replicas, a call not held runs at once', async () => {
    model.script('p-hitl', [
      toolCallsReply([
        { id: 'call_1', name: 'note', args: { text: 'first' } },
        { id: 'call_2', name: 'slow_read', args: { key: 'free-hitl' } },
        { id: 'call_3', name: 'note', args: { text: 'third' } },
        { id: 'call_4', name: 'note', args: { text: 'fourth' } },
      ]),
      textReply('Handled.'),
    ]);
    const stream = await invoke(api(0), token, {
      message: 'Take notes',
      llm_config: llm('p-hitl'),
      hitl_config: { allowlist: ['slow_read'] },
    });
    // Three held calls announced together; the allowlisted read ran without waiting for them.
    await stream.waitFor(() => stream.events.filter(isType('approval_request')).length === 3);
    await resultOf(stream, 'call_2');
    expect(stream.events.some(isType('approval_result'))).toBe(false);
    const requestOf = (callId: string) =>
      (
        stream.events.find(
          (e) => e.data.type === 'approval_request' && e.data.tool_call_id === callId,
        )!.data as unknown as ApprovalRequestEvent
      ).request_id;
    const runId = stream.events.find(isType('session'))!.data.run_id as string;

    // The fourth first, alone, on the other replica: it runs before the others are decided.
    const single = await fetch(`${api(1)}/api/agent/approvals/${requestOf('call_4')}/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ decision: 'edit', tool_args: { text: 'fourth, edited' } }),
    });
    expect(single.status).toBe(200);
    await resultOf(stream, 'call_4');
    expect(notes).toEqual([{ text: 'fourth, edited' }]);
    const batch = await fetch(`${api(0)}/api/agent/runs/${runId}/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        decisions: [
          { request_id: requestOf('call_3'), decision: 'reject', message: 'skip it' },
          { request_id: requestOf('call_1'), decision: 'approve' },
        ],
      }),
    });
    expect(batch.status).toBe(200);
    const events = await stream.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    expect(notes).toEqual([{ text: 'fourth, edited' }, { text: 'first' }]);
    expect(
      Object.fromEntries(
        events.filter(isType('approval_result')).map((e) => [e.data.tool_call_id, e.data.outcome]),
      ),
    ).toEqual({ call_1: 'approved', call_3: 'rejected', call_4: 'edited' });
    const stored = toolMessagesAfter(model.requests('p-hitl')[1]!, [
      'call_1',
      'call_2',
      'call_3',
      'call_4',
    ]);
    expect(stored.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2', 'call_3', 'call_4']);
    expect(stored.map((m) => m.content)).toEqual([
      'noted first',
      'read free-hitl',
      expect.stringContaining('skip it'),
      'noted fourth, edited',
    ]);
  });

  it('gives every call one tool message when the client leaves mid-turn', async () => {
    model.script('p-abort', [
      toolCallsReply([
        { id: 'call_x', name: 'slow_read', args: { key: 'hang-x' } },
        { id: 'call_y', name: 'slow_read', args: { key: 'free-y' } },
        { id: 'call_z', name: 'slow_read', args: { key: 'hang-z' } },
      ]),
    ]);
    const stream = await invoke(api(1), token, {
      message: 'Read slowly',
      llm_config: llm('p-abort'),
    });
    await resultOf(stream, 'call_y');
    await until(() => held.arrived.includes('hang-x') && held.arrived.includes('hang-z'), 'hangs');
    const session = stream.events.find(isType('session'))!.data;
    const sessionId = session.session_id as string;
    const invokeAgain = () =>
      invoke(api(0), token, {
        message: 'What happened?',
        session_id: sessionId,
        llm_config: llm('p-abort'),
      });
    stream.close();
    // No client and no grace: the run stops and frees the session; the next invoke then runs.
    model.script('p-abort', [textReply('Sorry about that.')]);
    const deadline = Date.now() + 15_000;
    let next = await invokeAgain();
    while (next.response.status === 409 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      next = await invokeAgain();
    }
    expect((await next.ended).at(-1)!.data.type).toBe('done');
    // The aborted run's log: every call got its result, the quick one first.
    const replayed = await (await resume(api(1), token, sessionId, `${session.run_id}:1`)).ended;
    expect(replayed.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
    const order = resultOrder(replayed);
    expect(order[0]).toBe('call_y');
    expect([...order].sort()).toEqual(['call_x', 'call_y', 'call_z']);
    const cancelled = 'Cancelled: the run was stopped.';
    expect(
      toolMessagesAfter(model.requests('p-abort')[1]!, ['call_x', 'call_y', 'call_z']),
    ).toEqual([
      { role: 'tool', tool_call_id: 'call_x', content: cancelled },
      { role: 'tool', tool_call_id: 'call_y', content: 'read free-y' },
      { role: 'tool', tool_call_id: 'call_z', content: cancelled },
    ]);
  });
});

/**
 * The SDK's conversations calls against two API replicas over PostgreSQL: sessions listed and
 * their messages read with async-iterable pagination, a session read, renamed and deleted, a
 * run read and cancelled from the replica that does not run it, the usage report; each call
 * with the call options (`timeout` through a stalled connection, `signal`, `retries`).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTcpProxy, textReply, type TcpProxy } from '@agent-backend/testing';
import {
  AgentBackendClient,
  NotFoundError,
  TimeoutError,
  type AgentEvent,
  type SessionSummary,
  type StoredMessage,
} from '../packages/client/src/index.js';
import { startAgentCluster, type AgentCluster } from './agent-helpers.js';

describe('SDK conversations calls on two API replicas', () => {
  let cluster: AgentCluster;
  let proxy: TcpProxy;
  let token: string;
  /** Through replica 1, or through a proxy in front of replica 2. */
  const clients = () => [
    new AgentBackendClient({ baseUrl: cluster.api[0]!.url, token }),
    new AgentBackendClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, token }),
  ];
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-sdk-conv',
    modelName,
  });
  /** A finished run on `sessionId` through `client`: its events. */
  const turn = async (client: AgentBackendClient, sessionId: string, message: string) => {
    const modelName = `m-${randomUUID()}`;
    cluster.model.script(modelName, [textReply(`Re: ${message}`, 2)]);
    const events: AgentEvent[] = [];
    const run = client.invoke({
      session_id: sessionId,
      message,
      llm_config: llm(modelName),
      sandbox_mode: 'none',
    });
    for await (const event of run) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    return { events, runId: run.runId! };
  };

  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(cluster.api[1]!.url).port),
    });
    token = await cluster.token(`sdk-conv-${randomUUID()}`);
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await cluster?.stop();
  });

  it('lists sessions and reads messages page by page with for await, reads, renames and deletes', async () => {
    const [a, b] = clients();
    for (const id of ['first', 'second', 'third']) await turn(a!, `sdk-${id}`, `About ${id}`);
    await turn(b!, 'sdk-first', 'More about first');

    const listed: SessionSummary[] = [];
    // Pages of one: three requests, newest activity first.
    for await (const session of b!.sessions.list({ limit: 1 }, { timeout: 30_000 })) {
      listed.push(session);
    }
    expect(listed.map((s) => s.session_id)).toEqual(['sdk-first', 'sdk-third', 'sdk-second']);
    expect(listed[0]).toMatchObject({
      title: 'About first',
      message_count: 4,
      last_message_preview: 'Re: More about first',
      active_run_id: null,
    });
    const found: string[] = [];
    for await (const session of a!.sessions.list({ q: 'THIRD' })) found.push(session.session_id);
    expect(found).toEqual(['sdk-third']);

    const messages: StoredMessage[] = [];
    for await (const message of a!.sessions.messages('sdk-first', { limit: 3 }, { retries: 2 })) {
      messages.push(message);
    }
    expect(messages.map((m) => [m.seq, m.role])).toEqual([
      [1, 'user'],
      [2, 'assistant'],
      [3, 'user'],
      [4, 'assistant'],
    ]);
    expect(messages[3]).toMatchObject({ content: 'Re: More about first', tool_calls: [] });
    const page = await b!.sessions.messagesPage('sdk-first', { limit: 3 });
    expect(page.messages).toHaveLength(3);
    expect(page.next_cursor).toEqual(expect.any(String));

    const detail = await b!.sessions.get('sdk-second');
    expect(detail).toMatchObject({ session_id: 'sdk-second', todos: [], pending_plan: null });
    const renamed = await a!.sessions.rename('sdk-second', 'Renamed by the SDK');
    expect(renamed).toMatchObject({ session_id: 'sdk-second', title: 'Renamed by the SDK' });
    expect((await b!.sessions.get('sdk-second')).title).toBe('Renamed by the SDK');

    await b!.sessions.delete('sdk-second');
    const gone = await a!.sessions.get('sdk-second').catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone).toMatchObject({ status: 404, code: 'not_found' });
    const missing = await a!.sessions.delete('sdk-second').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    const left: string[] = [];
    for await (const session of a!.sessions.list()) left.push(session.session_id);
    expect(left).toEqual(['sdk-first', 'sdk-third']);
  });

  it('reads a run, cancels a running one from the other replica, and reads the usage', async () => {
    const [a, b] = clients();
    const { runId, events } = await turn(a!, 'sdk-usage', 'Count it');
    const done = events.at(-1) as Extract<AgentEvent, { type: 'done' }>;
    const run = await b!.runs.get(runId);
    expect(run).toMatchObject({ run_id: runId, session_id: 'sdk-usage', status: 'done' });
    expect(run.usage).toEqual(done.usage);

    const modelName = `m-held-${randomUUID()}`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script(modelName, [
      { kind: 'stream', pieces: [{ text: 'Thinking' }, { waitFor: held }, { finish: 'stop' }] },
    ]);
    const running = a!.invoke({
      session_id: 'sdk-held',
      message: 'Take your time',
      llm_config: llm(modelName),
      sandbox_mode: 'none',
    });
    const seen: AgentEvent[] = [];
    let cancelled: unknown;
    for await (const event of running) {
      seen.push(event);
      if (event.type === 'message_chunk' && cancelled === undefined) {
        // Replica 2 (behind the proxy) does not run it.
        cancelled = await b!.runs.cancel(running.runId!);
      }
    }
    release();
    expect(cancelled).toMatchObject({
      run_id: running.runId,
      status: 'aborted',
      error: { code: 'run_aborted' },
    });
    expect(seen.at(-1)).toMatchObject({ type: 'error', code: 'run_aborted' });
    expect((await a!.runs.get(running.runId!)).status).toBe('aborted');
    const unknown = await b!.runs.get('run_unknown').catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);

    const today = new Date().toISOString().slice(0, 10);
    const report = await b!.usage.get({ from: today, to: today });
    expect(report).toMatchObject({ from: today, to: today });
    expect(report.total.runs).toBeGreaterThanOrEqual(2);
    expect(report.total.prompt_tokens).toBeGreaterThanOrEqual(done.usage!.prompt_tokens);
  });

  it('applies timeout, signal and retries to the conversations calls', async () => {
    const [, b] = clients();
    proxy.setMode('stall');
    try {
      const late = await b!.sessions.get('sdk-first', { timeout: 300 }).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(TimeoutError);
      const controller = new AbortController();
      const pending = b!.usage.get({}, { signal: controller.signal }).catch((e: unknown) => e);
      const reason = new Error('closed the page');
      controller.abort(reason);
      expect(await pending).toBe(reason);
      const iterating = (async () => {
        for await (const session of b!.sessions.list({}, { timeout: 300 })) return session;
        return undefined;
      })().catch((e: unknown) => e);
      expect(await iterating).toBeInstanceOf(TimeoutError);
    } finally {
      proxy.setMode('forward');
    }
    proxy.setMode('drop');
    const before = proxy.accepted;
    const retried = b!.runs.get('run_unknown', { retries: 6 }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(proxy.accepted).toBeGreaterThan(before), { timeout: 10_000 });
    proxy.setMode('forward');
    // Sent again once the network was back: the service's answer, not the network failure.
    expect(await retried).toBeInstanceOf(NotFoundError);
  });
});

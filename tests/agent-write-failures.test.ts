/**
 * The run's durable writes against a real PostgreSQL that refuses one of them (a trigger on the
 * test's own session), and resume while the writes may trail the stream: a run whose
 * write fails ends with `error`, never `done`; a dropped stream resumes on the other replica.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import {
  invoke,
  resume,
  startAgentCluster,
  type AgentCluster,
  type SseEvent,
} from './agent-helpers.js';
import { joinRun, slowInserts } from './durable-helpers.js';

const types = (events: SseEvent[]) => events.map((e) => e.data.type);
const todos = (content: string) => ({ todos: [{ content }] });

describe('agent: durable writes that fail, and resume', () => {
  let cluster: AgentCluster;
  let token: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-writes',
    modelName,
  });
  const url = (i: 0 | 1) => cluster.api[i]!.url;
  const runStatus = (runId: string) => cluster.runStatus(runId);

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      AGENT_DISCONNECT_GRACE_MS: '5000',
      AGENT_TAKEOVER: 'false',
    });
    token = await cluster.token('wendy');
    await cluster.sql(
      `CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'write refused by the test'; END $$`,
    );
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  /** A trigger refusing `when` on `table` for `sessionId` only. */
  const refuse = (table: string, operation: string, sessionId: string, when = 'true') =>
    cluster.sql(
      `CREATE TRIGGER "refuse_${sessionId}" BEFORE ${operation} ON ${table} FOR EACH ROW
       WHEN (NEW.session_id = '${sessionId}' AND ${when}) EXECUTE FUNCTION refuse_write()`,
    );

  it('ends with error, not done, when the user message write fails while the answer streams', async () => {
    const sessionId = `writes-user-${randomUUID()}`;
    await refuse('agent_messages', 'INSERT', sessionId);
    cluster.model.script('w-user', [textReply('An answer nobody stores.')]);
    const stream = await invoke(url(0), token, {
      message: 'hello',
      session_id: sessionId,
      llm_config: llm('w-user'),
    });
    expect(stream.response.status).toBe(200);
    const events = await stream.ended;
    expect(types(events)[0]).toBe('session');
    expect(types(events).at(-1)).toBe('error');
    expect(types(events)).not.toContain('done');
    expect(await runStatus(String(events[0]!.data.run_id))).toBe('error');
  });

  it('never ends with done when the run row write fails; the session is free again after', async () => {
    const sessionId = `writes-run-${randomUUID()}`;
    await refuse('agent_runs', 'INSERT', sessionId);
    cluster.model.script('w-run', [textReply('Not recorded.'), textReply('Recorded.')]);
    const body = { message: 'hello', session_id: sessionId, llm_config: llm('w-run') };
    const stream = await invoke(url(0), token, body);
    const events = await stream.ended;
    // The run row is written behind the stream's start (the API's write-behind), while the
    // answer already streams: its failure is the stream's error event, after the chunks.
    expect(stream.response.status).toBe(200);
    expect(types(events)[0]).toBe('session');
    expect(types(events).slice(1, -1)).toEqual(
      types(events)
        .slice(1, -1)
        .map(() => 'message_chunk'),
    );
    expect(
      events
        .slice(1, -1)
        .map((e) => e.data.content)
        .join(''),
    ).toBe('Not recorded.');
    expect(types(events).at(-1)).toBe('error');
    expect(events.at(-1)!.data.code).toBe('internal_error');
    expect(types(events)).not.toContain('done');
    await cluster.sql(`DROP TRIGGER "refuse_${sessionId}" ON agent_runs`);
    const again = await (await invoke(url(1), token, body)).ended;
    expect(types(again).at(-1)).toBe('done');
  });

  it.each([
    ['run row', 'agent_runs'],
    ['user message', 'agent_messages'],
  ])(
    'a new session (no session_id) whose %s write fails ends with error, not done; its id works after',
    async (_, table) => {
      const userId = `writes-new-${randomUUID()}`;
      const own = await cluster.token(userId);
      // No session id to key on before the run: the trigger refuses this user's rows.
      await cluster.sql(
        `CREATE TRIGGER "refuse_${userId}" BEFORE INSERT ON ${table} FOR EACH ROW
         WHEN (NEW.user_id = '${userId}') EXECUTE FUNCTION refuse_write()`,
      );
      cluster.model.script(`w-new-${table}`, [textReply('Not kept.'), textReply('Kept.')]);
      const llmConfig = llm(`w-new-${table}`);
      const stream = await invoke(url(0), own, {
        message: 'hello',
        llm_config: llmConfig,
      });
      expect(stream.response.status).toBe(200);
      const events = await stream.ended;
      expect(types(events)[0]).toBe('session');
      expect(types(events).at(-1)).toBe('error');
      expect(types(events)).not.toContain('done');
      const sessionId = String(events[0]!.data.session_id);
      await cluster.sql(`DROP TRIGGER "refuse_${userId}" ON ${table}`);
      // Its lease was released: the session id the stream gave runs on the other replica.
      const again = await (
        await invoke(url(1), own, {
          message: 'again',
          session_id: sessionId,
          llm_config: llmConfig,
        })
      ).ended;
      expect(types(again).at(-1)).toBe('done');
    },
  );

  it("ends with error, not done, when the tool step's write fails; a resumed stream ends the same", async () => {
    const sessionId = `writes-step-${randomUUID()}`;
    // The tool step writes the session's new todos: that update is refused.
    await refuse('agent_sessions', 'UPDATE', sessionId, 'NEW.state IS DISTINCT FROM OLD.state');
    cluster.model.script('w-step', [
      toolCallsReply([{ id: 'call_w', name: 'write_todos', args: todos('Never stored') }]),
      textReply('Done with the plan.'),
    ]);
    const stream = await invoke(url(0), token, {
      message: 'plan',
      session_id: sessionId,
      llm_config: llm('w-step'),
    });
    const toolCall = await stream.waitFor((e) => e.data.type === 'tool_call');
    const events = await stream.ended;
    expect(types(events)).toContain('tool_result');
    expect(types(events).at(-1)).toBe('error');
    expect(types(events)).not.toContain('done');
    const runId = String(events[0]!.data.run_id);
    expect(await runStatus(runId)).toBe('error');
    // Resumed on the other replica from the tool call: the same end.
    const rest = await (await resume(url(1), token, sessionId, toolCall.id)).ended;
    expect(rest.map((e) => e.id)).toEqual(
      events.slice(events.indexOf(toolCall) + 1).map((e) => e.id),
    );
    expect(types(rest).at(-1)).toBe('error');
  });

  it("a tool step's stored state holds the tokens of the turns before it, not those of the next turn that overlapped its save", async () => {
    const sessionId = `writes-usage-${randomUUID()}`;
    // The user message takes 2 s to store: the tool step's save waits for it while the next
    // model request streams.
    const removeSlow = await slowInserts(cluster, {
      seconds: 2,
      table: 'agent_messages',
      when: `NEW.session_id = '${sessionId}' AND NEW.message->>'role' = 'user'`,
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The next turn reports tokens (a usage chunk, as a provider may send before its end)
    // and then waits: its tokens are counted by the run, but they are not the tool step's.
    const nextTurn = { prompt_tokens: 100_000, completion_tokens: 7, total_tokens: 100_007 };
    const usageChunk = { id: 'u', object: 'chat.completion.chunk', created: 0, choices: [] };
    cluster.model.script('w-usage', [
      toolCallsReply([{ id: 'call_u', name: 'write_todos', args: todos('Count once') }]),
      {
        kind: 'stream',
        pieces: [
          { raw: `data: ${JSON.stringify({ ...usageChunk, usage: nextTurn })}\n\n` },
          { waitFor: held },
          { text: 'Counted.' },
          { finish: 'stop' },
        ],
      },
    ]);
    const stream = await invoke(url(0), token, {
      message: 'count',
      session_id: sessionId,
      llm_config: llm('w-usage'),
    });
    try {
      const first = await stream.waitFor((e) => e.data.type === 'session');
      const runId = String(first.data.run_id);
      type Stored = { step: number; usage: { prompt_tokens: number; completion_tokens: number } };
      let stored: Stored | undefined;
      while (!stored || stored.step < 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const rows = await cluster.sql<{ state: Stored | null }>(
          'SELECT state FROM agent_runs WHERE run_id = $1',
          [runId],
        );
        stored = rows[0]?.state ?? undefined;
      }
      // The first turn's own usage, as the scripted model counts it (see scripted-model.ts).
      const [request] = cluster.model.requests('w-usage');
      const args = JSON.stringify(todos('Count once'));
      expect(stored.usage).toEqual({
        prompt_tokens: JSON.stringify(request!.body.messages).length,
        completion_tokens: args.length,
      });
    } finally {
      release();
    }
    const events = await stream.ended;
    expect(types(events).at(-1)).toBe('done');
    await removeSlow();
  });

  it('streams before its rows are stored; read and joined on the other replica by run id and by session meanwhile', async () => {
    const userId = `writes-slow-${randomUUID()}`;
    const own = await cluster.token(userId);
    // A new session (the bench's case): its run row takes 3 s to store.
    const removeSlow = await slowInserts(cluster, { userId, seconds: 3 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('w-slow', [
      {
        kind: 'stream',
        pieces: [{ text: 'Early ' }, { waitFor: held }, { text: 'answer.' }, { finish: 'stop' }],
      },
    ]);
    const first = await invoke(url(0), own, { message: 'go', llm_config: llm('w-slow') });
    try {
      const chunk = await first.waitFor((e) => e.data.type === 'message_chunk');
      const session = first.events[0]!;
      const runId = String(session.data.run_id);
      const sessionId = String(session.data.session_id);
      // The first chunk came while the run row was still being written.
      const rows = await cluster.sql('SELECT 1 FROM agent_runs WHERE run_id = $1', [runId]);
      expect(rows).toHaveLength(0);
      const byRun = await joinRun(url(1), own, runId);
      const bySession = await resume(url(1), own, sessionId, session.id);
      expect(byRun.response.status).toBe(200);
      expect(bySession.response.status).toBe(200);
      await byRun.waitFor((e) => e.id === chunk.id);
      const read = (token: string) =>
        fetch(`${url(1)}/api/agent/runs/${runId}`, {
          headers: { authorization: `Bearer ${token}` },
        });
      const running = await read(own);
      expect(running.status).toBe(200);
      expect(await running.json()).toMatchObject({
        run_id: runId,
        session_id: sessionId,
        status: 'running',
        started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        ended_at: null,
        error: null,
      });
      // Another user is not shown the run.
      const other = await cluster.token(`writes-other-${randomUUID()}`);
      expect((await read(other)).status).toBe(404);
      expect((await joinRun(url(1), other, runId)).response.status).toBe(404);
      expect((await resume(url(1), other, sessionId, session.id)).response.status).toBe(404);
      release();
      const all = await first.ended;
      expect(types(all)).toEqual(['session', 'message_chunk', 'message_chunk', 'done']);
      expect((await byRun.ended).map((e) => e.id)).toEqual(all.map((e) => e.id));
      expect((await bySession.ended).map((e) => e.id)).toEqual(all.slice(1).map((e) => e.id));
      expect(await runStatus(runId)).toBe('done');
    } finally {
      release();
      await removeSlow();
    }
  });

  it("a session's stream without Last-Event-ID joins its current run while that run's rows are still being written, not the run before", async () => {
    const userId = `writes-current-${randomUUID()}`;
    const own = await cluster.token(userId);
    const sessionId = `writes-current-${randomUUID()}`;
    cluster.model.script('w-before', [textReply('The first run.')]);
    const before = await (
      await invoke(url(0), own, {
        message: 'one',
        session_id: sessionId,
        llm_config: llm('w-before'),
      })
    ).ended;
    expect(types(before).at(-1)).toBe('done');
    // The second run's row (and with it the session's last run) takes 3 s to store.
    const removeSlow = await slowInserts(cluster, { userId, seconds: 3 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('w-current', [
      {
        kind: 'stream',
        pieces: [{ text: 'Second ' }, { waitFor: held }, { text: 'run.' }, { finish: 'stop' }],
      },
    ]);
    const second = await invoke(url(0), own, {
      message: 'two',
      session_id: sessionId,
      llm_config: llm('w-current'),
    });
    try {
      await second.waitFor((e) => e.data.type === 'message_chunk');
      const runId = String(second.events[0]!.data.run_id);
      expect(await cluster.sql('SELECT 1 FROM agent_runs WHERE run_id = $1', [runId])).toHaveLength(
        0,
      );
      const joined = await resume(url(1), own, sessionId);
      expect(joined.response.status).toBe(200);
      const first = await joined.waitFor(() => true);
      expect(first.data).toMatchObject({ type: 'session', run_id: runId });
      release();
      const all = await second.ended;
      expect((await joined.ended).map((e) => e.id)).toEqual(all.map((e) => e.id));
    } finally {
      release();
      await removeSlow();
    }
  });

  it('a run whose rows are still being written is cancelled from the other replica', async () => {
    const userId = `writes-cancel-${randomUUID()}`;
    const own = await cluster.token(userId);
    const removeSlow = await slowInserts(cluster, { userId, seconds: 2 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('w-cancel', [
      {
        kind: 'stream',
        pieces: [{ text: 'Never ' }, { waitFor: held }, { text: 'finished.' }, { finish: 'stop' }],
      },
    ]);
    const stream = await invoke(url(0), own, { message: 'go', llm_config: llm('w-cancel') });
    try {
      await stream.waitFor((e) => e.data.type === 'message_chunk');
      const runId = String(stream.events[0]!.data.run_id);
      expect(await cluster.sql('SELECT 1 FROM agent_runs WHERE run_id = $1', [runId])).toHaveLength(
        0,
      );
      const other = await cluster.token(`writes-other-${randomUUID()}`);
      const cancel = (token: string) =>
        fetch(`${url(1)}/api/agent/runs/${runId}/cancel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        });
      // Not another user's to cancel.
      expect((await cancel(other)).status).toBe(404);
      const cancelled = await cancel(own);
      expect(cancelled.status).toBe(200);
      expect(await cancelled.json()).toMatchObject({ run_id: runId, status: 'aborted' });
      const events = await stream.ended;
      expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
    } finally {
      release();
      await removeSlow();
    }
  });

  it('resumes on the other replica from Last-Event-ID after a tool step; the run and its rows complete', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('w-resume', [
      toolCallsReply([{ id: 'call_r', name: 'write_todos', args: todos('Resume') }]),
      {
        kind: 'stream',
        pieces: [{ text: 'After ' }, { waitFor: held }, { text: 'the tool.' }, { finish: 'stop' }],
      },
    ]);
    const first = await invoke(url(0), token, { message: 'go', llm_config: llm('w-resume') });
    await first.waitFor((e) => e.data.content === 'After ');
    const seen = [...first.events];
    first.close();
    const sessionId = String(seen[0]!.data.session_id);
    const runId = String(seen[0]!.data.run_id);

    const resumed = await resume(url(1), token, sessionId, seen.at(-1)!.id);
    expect(resumed.response.status).toBe(200);
    release();
    const rest = await resumed.ended;
    const all = [...seen, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => `${runId}:${i + 1}`));
    expect(types(all)).toEqual([
      'session',
      'tool_call',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    // Joined by run id from the start on either replica: the same events.
    const joined = await (await joinRun(url(0), token, runId)).ended;
    expect(joined.map((e) => e.id)).toEqual(all.map((e) => e.id));
    // Every row of the run is stored by `done`: the user message, the tool step, the answer.
    const rows = await cluster.sql<{ message: { role: string; content: unknown } }>(
      'SELECT message FROM agent_messages WHERE run_id = $1 ORDER BY seq',
      [runId],
    );
    expect(rows.map((r) => r.message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows.at(-1)!.message.content).toBe('After the tool.');
    expect(await runStatus(runId)).toBe('done');
  });
});

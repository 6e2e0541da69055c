import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke, resume, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const API_KEY = 'sk-test-secret-4f9a1c7e';

/** Two API replicas on one Redis and one PostgreSQL, and a scripted model both call. */
describe('agent invoke: streaming, tools, sessions', () => {
  let cluster: AgentCluster;
  let alice: string;
  let bob: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: API_KEY,
    modelName,
  });
  const url = (i: 0 | 1) => cluster.api[i]!.url;

  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    alice = await cluster.token('alice');
    bob = await cluster.token('bob');
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('streams the answer as SSE with an id per event, announcing the session first', async () => {
    cluster.model.script('m-hello', [textReply('Hello there, Alice!', 3)]);
    const stream = await invoke(url(0), alice, { message: 'Hi', llm_config: llm('m-hello') });
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
    expect(stream.response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const events = await stream.ended;
    const types = events.map((e) => e.data.type);
    expect(types).toEqual(['session', 'message_chunk', 'message_chunk', 'message_chunk', 'done']);
    const session = events[0]!.data as unknown as { session_id: string; run_id: string };
    expect(session.session_id).toMatch(/^sess_[0-9a-f-]{36}$/);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => `${session.run_id}:${i + 1}`));
    const text = events.filter((e) => e.data.type === 'message_chunk').map((e) => e.data.content);
    expect(text.join('')).toBe('Hello there, Alice!');
    expect(events.at(-1)!.data).toMatchObject({ type: 'done', session_id: session.session_id });
    const [request] = cluster.model.requests('m-hello');
    expect(request!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request!.body).toMatchObject({ model: 'm-hello', stream: true, temperature: 0.7 });
    expect(request!.body.messages!.at(-1)).toEqual({ role: 'user', content: 'Hi' });
  });

  it('runs several tool calls of one turn whose arguments arrive in pieces', async () => {
    cluster.model.script('m-todos', [
      toolCallsReply(
        [
          { id: 'call_a', name: 'write_todos', args: { todos: [{ content: 'Search flights' }] } },
          {
            id: 'call_b',
            name: 'write_todos',
            args: {
              todos: [{ content: 'Search flights', status: 'completed' }, { content: 'Book' }],
            },
          },
        ],
        { parts: 4, interleave: true },
      ),
      textReply('Planned.'),
    ]);
    const stream = await invoke(url(1), alice, {
      message: 'Plan a trip',
      llm_config: { ...llm('m-todos'), temperature: 0.1 },
    });
    const events = (await stream.ended).map((e) => e.data);
    // Both calls start at once (in the model's order); each result follows its own call.
    expect(events.map((e) => e.type)).toEqual([
      'session',
      'tool_call',
      'tool_call',
      'todos',
      'todos',
      'tool_result',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(events[1]).toEqual({
      type: 'tool_call',
      tool_name: 'write_todos',
      tool_args: { todos: [{ content: 'Search flights' }] },
      tool_call_id: 'call_a',
    });
    expect(events.filter((e) => e.type === 'todos')[1]).toEqual({
      type: 'todos',
      todos: [
        { content: 'Search flights', status: 'completed' },
        { content: 'Book', status: 'pending' },
      ],
    });
    const requests = cluster.model.requests('m-todos');
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body.temperature).toBe(0.1);
    expect(requests[0]!.body.tools!.map((t) => t.function.name)).toContain('write_todos');
    expect(requests[1]!.body.messages!.slice(-3)).toEqual([
      expect.objectContaining({
        role: 'assistant',
        tool_calls: [
          expect.objectContaining({
            id: 'call_a',
            function: expect.objectContaining({ name: 'write_todos' }),
          }),
          expect.objectContaining({ id: 'call_b' }),
        ],
      }),
      expect.objectContaining({ role: 'tool', tool_call_id: 'call_a' }),
      expect.objectContaining({ role: 'tool', tool_call_id: 'call_b' }),
    ]);
  });

  it('rejects an invalid body with 400 and every field error before any stream starts', async () => {
    const res = await fetch(`${url(0)}/api/agent/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
      body: JSON.stringify({
        message: '',
        mode: 'yolo',
        llm_config: { baseUrl: 'ftp://x', apiKey: API_KEY, modelName: 'm', temperature: 9 },
      }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/json');
    const text = await res.text();
    expect(text).not.toContain(API_KEY);
    const body = JSON.parse(text) as { error: { code: string; details: Array<{ path: string }> } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details.map((d) => d.path).sort()).toEqual([
      'llm_config.baseUrl',
      'llm_config.temperature',
      'message',
      'mode',
    ]);
    expect(cluster.model.requests('m')).toHaveLength(0);
  });

  it('requires a valid access token', async () => {
    const anonymous = await invoke(url(0), undefined, { message: 'x', llm_config: llm('m-none') });
    expect(anonymous.response.status).toBe(401);
    const forged = await invoke(url(0), `${alice.slice(0, -4)}AAAA`, {
      message: 'x',
      llm_config: llm('m-none'),
    });
    expect(forged.response.status).toBe(401);
    expect(cluster.model.requests('m-none')).toHaveLength(0);
  });

  it('continues a session on the other replica with the stored conversation', async () => {
    cluster.model.script('m-continue', [
      textReply('Your name is Alice.'),
      textReply('You said so before.'),
    ]);
    const first = await (
      await invoke(url(0), alice, { message: 'My name is Alice.', llm_config: llm('m-continue') })
    ).ended;
    const sessionId = first[0]!.data.session_id as string;
    const second = await (
      await invoke(url(1), alice, {
        message: 'What is my name?',
        session_id: sessionId,
        llm_config: llm('m-continue'),
      })
    ).ended;
    expect(second[0]!.data.session_id).toBe(sessionId);
    expect(second.at(-1)!.data).toMatchObject({ type: 'done', session_id: sessionId });
    const messages = cluster.model.requests('m-continue')[1]!.body.messages!;
    expect(messages.slice(1)).toEqual([
      { role: 'user', content: 'My name is Alice.' },
      { role: 'assistant', content: 'Your name is Alice.' },
      { role: 'user', content: 'What is my name?' },
    ]);
  });

  it("gives another user naming a session id a session of their own: they never read or extend the owner's", async () => {
    cluster.model.script('m-private', [textReply('secret plans'), textReply('still private')]);
    const mine = await (
      await invoke(url(0), alice, { message: 'x', llm_config: llm('m-private') })
    ).ended;
    const sessionId = mine[0]!.data.session_id as string;
    const aliceRun = mine[0]!.data.run_id as string;

    cluster.model.script('m-bob', [textReply('hi bob')]);
    const theirs = await invoke(url(1), bob, {
      message: 'show me',
      session_id: sessionId,
      llm_config: llm('m-bob'),
    });
    expect(theirs.response.status).toBe(200);
    const bobEvents = (await theirs.ended).map((e) => e.data);
    expect(bobEvents.at(-1)).toMatchObject({ type: 'done', session_id: sessionId });
    // Bob's model saw his message only: nothing of alice's conversation.
    const bobSent = cluster.model.requests('m-bob')[0]!.body.messages!;
    expect(bobSent.slice(1)).toEqual([{ role: 'user', content: 'show me' }]);
    // Alice's run is not his to resume, on either replica.
    for (const i of [0, 1] as const) {
      const resumed = await resume(url(i), bob, sessionId, `${aliceRun}:1`);
      expect(resumed.response.status).toBe(404);
      expect(await resumed.response.json()).toEqual({
        error: { code: 'not_found', message: `session ${sessionId} has no run to resume` },
      });
    }

    // Alice's session goes on as hers alone: bob's turn was not appended to it.
    const again = await invoke(url(1), alice, {
      message: 'again',
      session_id: sessionId,
      llm_config: llm('m-private'),
    });
    expect((await again.ended).at(-1)!.data).toMatchObject({ type: 'done', session_id: sessionId });
    const aliceSent = cluster.model.requests('m-private')[1]!.body.messages!;
    expect(aliceSent.slice(1)).toEqual([
      { role: 'user', content: 'x' },
      { role: 'assistant', content: 'secret plans' },
      { role: 'user', content: 'again' },
    ]);
  });

  it("refuses the service's own session ids (chats, scheduled runs) with 400 session_id_reserved", async () => {
    for (const sessionId of [
      'chat:lark:oc_team',
      'chat:feishu:oc_x',
      'task:daily:1767225600000:1',
    ]) {
      const refused = await invoke(url(0), alice, {
        message: 'take it',
        session_id: sessionId,
        llm_config: llm('m-never'),
      });
      expect(refused.response.status).toBe(400);
      expect(await refused.response.json()).toEqual({
        error: {
          code: 'session_id_reserved',
          message:
            'session_id must not start with "chat:" or "task:": those are the sessions of chats ' +
            'and scheduled tasks',
        },
      });
    }
    expect(cluster.model.requests('m-never')).toHaveLength(0);
    const resumed = await resume(url(1), alice, 'chat:lark:oc_team');
    expect(resumed.response.status).toBe(400);
    expect(await resumed.response.json()).toMatchObject({
      error: { code: 'session_id_reserved' },
    });
  });

  it('refuses a concurrent invoke on a busy session with 409 session_busy, on any replica', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('m-busy', [
      {
        kind: 'stream',
        pieces: [{ text: 'Working' }, { waitFor: held }, { text: '…done' }, { finish: 'stop' }],
      },
      textReply('Next.'),
    ]);
    const first = await invoke(url(0), alice, { message: 'long job', llm_config: llm('m-busy') });
    const session = await first.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = first.events[0]!.data.session_id as string;
    expect(session.data.content).toBe('Working');
    for (const i of [0, 1] as const) {
      const second = await invoke(url(i), alice, {
        message: 'meanwhile',
        session_id: sessionId,
        llm_config: llm('m-busy'),
      });
      expect(second.response.status).toBe(409);
      expect(await second.response.json()).toEqual({
        error: {
          code: 'session_busy',
          message: `session ${sessionId} has a run in progress; retry when it has finished`,
          details: { session_id: sessionId },
        },
      });
    }
    release();
    expect((await first.ended).at(-1)!.data.type).toBe('done');
    const third = await (
      await invoke(url(1), alice, {
        message: 'now',
        session_id: sessionId,
        llm_config: llm('m-busy'),
      })
    ).ended;
    expect(third.at(-1)!.data.type).toBe('done');
    expect(cluster.model.requests('m-busy')[1]!.body.messages!.slice(1)).toEqual([
      { role: 'user', content: 'long job' },
      { role: 'assistant', content: 'Working…done' },
      { role: 'user', content: 'now' },
    ]);
  });

  it('gives the model the context arrays and, in ask mode, no write tools', async () => {
    cluster.model.script('m-context', [textReply('Read it.')]);
    await (
      await invoke(url(0), alice, {
        message: 'Summarize',
        mode: 'ask',
        llm_config: llm('m-context'),
        chat_history: [
          { role: 'user', content: 'earlier question' },
          { role: 'assistant', content: 'earlier answer' },
        ],
        resource_files: [
          { name: 'spec.md', content: '# Spec\nThe sky is green.', type: 'text/markdown' },
        ],
        sandbox_files: [
          { name: 'data.csv', path: '/sandbox/data.csv', type: 'text/csv', size: 120 },
        ],
        chat_attachments: [
          { id: 'a1', name: 'note.txt', size: 11, type: 'text/plain', content: 'hello notes' },
        ],
      })
    ).ended;
    const [request] = cluster.model.requests('m-context');
    const messages = request!.body.messages!;
    const system = String(messages[0]!.content);
    expect(system).toContain('Mode: ask (read-only)');
    expect(system).toContain(
      '<resource_file name="spec.md" type="text/markdown">\n# Spec\nThe sky is green.',
    );
    expect(system).toContain('- /sandbox/data.csv (data.csv, text/csv, 120 bytes)');
    expect(messages.slice(1, 3)).toEqual([
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
    ]);
    expect(String(messages[3]!.content)).toContain('hello notes');
    expect(request!.body.tools).toBeUndefined();
  });

  it('accepts context files up to 4 MiB and cuts them to the context limits; larger bodies get 413', async () => {
    cluster.model.script('m-big', [textReply('Skimmed.')]);
    const big = 'y'.repeat(2 * 1024 * 1024);
    const events = await (
      await invoke(url(1), alice, {
        message: 'Read this',
        llm_config: llm('m-big'),
        resource_files: [{ name: 'big.txt', content: big, type: 'text/plain' }],
      })
    ).ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const system = String(cluster.model.requests('m-big')[0]!.body.messages![0]!.content);
    expect(system).toContain(
      `[… truncated: ${big.length - 20_000} of ${big.length} characters omitted]`,
    );
    const tooBig = await invoke(url(1), alice, {
      message: 'x',
      llm_config: llm('m-big'),
      resource_files: [
        { name: 'huge.txt', content: 'z'.repeat(5 * 1024 * 1024), type: 'text/plain' },
      ],
    });
    expect(tooBig.response.status).toBe(413);
  });

  it('writes one request log line per stream and never logs the API key', async () => {
    const lines = cluster.logs().split('\n').filter(Boolean);
    const requests = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && String(l.url).startsWith('/api/agent/invoke'));
    expect(requests.length).toBeGreaterThan(5);
    expect(requests.some((l) => l.status === 200 && l.userId === 'alice')).toBe(true);
    expect(cluster.logs()).not.toContain(API_KEY);
    expect(cluster.logs()).toContain('run ended');
  });
});

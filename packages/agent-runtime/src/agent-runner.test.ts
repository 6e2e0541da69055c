import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import type { AgentEvent, ChatHistoryItem, ConversationMode } from '@agent-backend/protocol';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { AgentRunner } from './agent-runner.js';
import { runRequest, type RunRequest } from './run-request.js';
import type { AgentTool, ToolSource } from './tool.js';
import { RunHandOver, SessionBusyError } from './errors.js';
import { sessionLeaseHolder } from './session-lease.js';
import { useRunnerFixture } from './testing/runner-fixture.js';

const fixture = useRunnerFixture('runner');
const logLines: string[] = [];

/** A runner as one API replica would hold it; several share the database and the lease store. */
function replica(toolSources: ToolSource[] = []): AgentRunner {
  const destination = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  return new AgentRunner({
    db: fixture.db,
    ephemeral: fixture.ephemeral,
    logger: createLogger({ destination, level: 'debug' }),
    toolSources,
  });
}

/** A run of the test model; the user is added where it is prepared. */
const request = (input: {
  modelName: string;
  message?: string;
  session_id?: string;
  mode?: ConversationMode;
  chat_history?: ChatHistoryItem[];
}): Omit<RunRequest, 'userId'> => {
  const { userId: _, ...rest } = runRequest({
    userId: '',
    message: input.message ?? 'hello',
    model: fixture.modelSettings(input.modelName, 'sk-runner-secret-99', 0.7),
    ...(input.session_id !== undefined ? { sessionId: input.session_id } : {}),
    ...(input.mode ? { mode: input.mode } : {}),
    ...(input.chat_history ? { history: input.chat_history } : {}),
  });
  return rest;
};

async function invoke(runner: AgentRunner, userId: string, req: Omit<RunRequest, 'userId'>) {
  const prepared = await runner.prepare({ ...req, userId });
  const events: AgentEvent[] = [];
  const result = await prepared.execute((e) => events.push(e), new AbortController().signal);
  return { prepared, events, result };
}

describe('AgentRunner', () => {
  it('continues a session on another replica with the whole conversation, tool calls included', async () => {
    fixture.model.script('r-continue', [
      toolCallsReply([
        { id: 'c1', name: 'write_todos', args: { todos: [{ content: 'Step one' }] } },
      ]),
      textReply('First answer.'),
      textReply('Second answer.'),
    ]);
    const first = await invoke(
      replica(),
      'alice',
      request({ modelName: 'r-continue', message: 'one' }),
    );
    expect(first.result).toEqual({ status: 'done' });
    const sessionId = first.prepared.sessionId;
    const second = await invoke(
      replica(),
      'alice',
      request({ modelName: 'r-continue', message: 'two', session_id: sessionId }),
    );
    expect(second.events.at(-1)).toMatchObject({ type: 'done', session_id: sessionId });
    const sent = fixture.model.requests('r-continue')[2]!.body.messages!;
    expect(sent[0]).toMatchObject({ role: 'system' });
    expect(String(sent[0]!.content)).toContain('Current todo list:\n1. [pending] Step one');
    expect(sent.slice(1).map((m) => [m.role, m.content ?? null])).toEqual([
      ['user', 'one'],
      ['assistant', null],
      ['tool', 'Todo list updated:\n1. [pending] Step one'],
      ['assistant', 'First answer.'],
      ['user', 'two'],
    ]);
  });

  it('gives another user naming the same session id a session of their own, and refuses a second concurrent run', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    fixture.model.script('r-busy', [
      { kind: 'stream', pieces: [{ text: 'wait' }, { waitFor: held }, { finish: 'stop' }] },
      textReply('after'),
    ]);
    fixture.model.script('r-bob', [textReply('hello bob')]);
    const runner = replica();
    const prepared = await runner.prepare({
      ...request({ modelName: 'r-busy', message: 'alice one', session_id: 'shared-id' }),
      userId: 'alice',
    });
    const running = prepared.execute(() => {}, new AbortController().signal);
    // Alice's run holds her session; bob's session of the same id is another one: not busy,
    // and it holds nothing of hers.
    const bobs = await invoke(
      replica(),
      'bob',
      request({ modelName: 'r-bob', message: 'bob one', session_id: 'shared-id' }),
    );
    expect(bobs.result).toEqual({ status: 'done' });
    expect(bobs.events.at(-1)).toMatchObject({ type: 'done', session_id: 'shared-id' });
    expect(
      fixture.model
        .requests('r-bob')[0]!
        .body.messages!.slice(1)
        .map((m) => [m.role, m.content]),
    ).toEqual([['user', 'bob one']]);
    await expect(
      replica().prepare({
        ...request({ modelName: 'r-busy', session_id: 'shared-id' }),
        userId: 'alice',
      }),
    ).rejects.toBeInstanceOf(SessionBusyError);
    release();
    expect(await running).toEqual({ status: 'done' });
    const after = await invoke(
      replica(),
      'alice',
      request({ modelName: 'r-busy', message: 'alice two', session_id: 'shared-id' }),
    );
    expect(after.result).toEqual({ status: 'done' });
    // Alice's conversation is hers alone: bob's turn was neither read nor appended to it.
    expect(
      fixture.model
        .requests('r-busy')[1]!
        .body.messages!.slice(1)
        .map((m) => [m.role, m.content]),
    ).toEqual([
      ['user', 'alice one'],
      ['assistant', 'wait'],
      ['user', 'alice two'],
    ]);
  });

  it('starts a new session from the client chat_history, and stores it', async () => {
    fixture.model.script('r-history', [
      textReply('Nice to meet you again.'),
      textReply('Still here.'),
    ]);
    const first = await invoke(
      replica(),
      'carol',
      request({
        modelName: 'r-history',
        message: 'Remember me?',
        chat_history: [
          { role: 'user', content: 'I am Carol.', timestamp: 1 },
          { role: 'assistant', content: 'Hello Carol.' },
        ],
      }),
    );
    await invoke(
      replica(),
      'carol',
      request({
        modelName: 'r-history',
        message: 'And now?',
        session_id: first.prepared.sessionId,
        chat_history: [{ role: 'user', content: 'ignored: the session has its own history' }],
      }),
    );
    const [a, b] = fixture.model
      .requests('r-history')
      .map((r) => r.body.messages!.slice(1).map((m) => m.content));
    expect(a).toEqual(['I am Carol.', 'Hello Carol.', 'Remember me?']);
    expect(b).toEqual([
      'I am Carol.',
      'Hello Carol.',
      'Remember me?',
      'Nice to meet you again.',
      'And now?',
    ]);
  });

  it('proposes a plan in plan mode and carries it out when the next invoke is in agent mode', async () => {
    fixture.model.script('r-plan', [
      toolCallsReply([
        { name: 'propose_plan', args: { summary: 'Tidy up', steps: ['Sort', 'Archive'] } },
      ]),
      textReply('Done tidying.'),
    ]);
    const planned = await invoke(replica(), 'dave', request({ modelName: 'r-plan', mode: 'plan' }));
    expect(planned.events.filter((e) => e.type === 'plan')).toEqual([
      { type: 'plan', status: 'proposed', summary: 'Tidy up', steps: ['Sort', 'Archive'] },
    ]);
    expect(planned.events.at(-1)?.type).toBe('done');
    const accepted = await invoke(
      replica(),
      'dave',
      request({
        modelName: 'r-plan',
        mode: 'agent',
        message: 'go ahead',
        session_id: planned.prepared.sessionId,
      }),
    );
    expect(accepted.events.slice(1, 3)).toEqual([
      { type: 'plan', status: 'accepted', summary: 'Tidy up', steps: ['Sort', 'Archive'] },
      {
        type: 'todos',
        todos: [
          { content: 'Sort', status: 'pending' },
          { content: 'Archive', status: 'pending' },
        ],
      },
    ]);
    const system = String(fixture.model.requests('r-plan')[1]!.body.messages![0]!.content);
    expect(system).toContain('The user accepted your plan "Tidy up"');
    const session = await replica().sessions.find(planned.prepared.sessionId, 'dave');
    expect(session?.state.pendingPlan).toBeUndefined();
  });

  it('adds what a source contributes: tools, system-prompt sections and opening events', async () => {
    fixture.model.script('r-contrib', [textReply('Noted.')]);
    const contributing: ToolSource = async (run) => ({
      tools: [
        {
          name: 'recall',
          description: 'Recalls a fact.',
          parameters: { type: 'object', properties: {} },
          writes: false,
          execute: async () => ({ content: 'nothing' }),
        },
      ],
      promptSections: [`Facts about ${run.userId}: likes tea.`],
      events: [{ type: 'todos', todos: [] }],
    });
    const failing: ToolSource = async () => {
      throw new Error('source down');
    };
    const plain: ToolSource = async () => [
      {
        name: 'lookup',
        description: 'Looks up.',
        parameters: { type: 'object', properties: {} },
        writes: false,
        execute: async () => ({ content: 'found' }),
      },
    ];
    const run = await invoke(
      replica([contributing, failing, plain]),
      'fran',
      request({ modelName: 'r-contrib' }),
    );
    expect(run.events.map((e) => e.type)).toEqual([
      'session',
      'todos',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    const [sent] = fixture.model.requests('r-contrib');
    expect(String(sent!.body.messages![0]!.content)).toContain('Facts about fran: likes tea.');
    expect(sent!.body.tools!.map((t) => t.function.name)).toEqual(
      expect.arrayContaining(['recall', 'lookup']),
    );
    expect(logLines.join('')).toContain('a tool source failed');
  });

  it("gives tool sources the session's earlier user turns, or the client history's", async () => {
    fixture.model.script('r-turns', [textReply('a'), textReply('b'), textReply('c')]);
    const seen: Array<readonly string[]> = [];
    const source: ToolSource = async (run) => {
      seen.push((await run.earlierUserTurns?.()) ?? ['(none)']);
      return [];
    };
    const first = await invoke(
      replica([source]),
      'gil',
      request({ modelName: 'r-turns', message: 'Draft an email' }),
    );
    await invoke(
      replica([source]),
      'gil',
      request({ modelName: 'r-turns', message: 'Shorter', session_id: first.prepared.sessionId }),
    );
    await invoke(
      replica([source]),
      'gil',
      request({
        modelName: 'r-turns',
        message: 'And now?',
        chat_history: [
          { role: 'user', content: 'From the client' },
          { role: 'assistant', content: 'Hello.' },
        ],
      }),
    );
    expect(seen).toEqual([[], ['Draft an email'], ['From the client']]);
  });

  it('ends with an error event on provider failure, keeps the session usable, and logs no key', async () => {
    fixture.model.script('r-fail', [
      { kind: 'error', status: 401, message: 'bad key sk-runner-secret-99' },
      textReply('Recovered.'),
    ]);
    const failed = await invoke(
      replica(),
      'erin',
      request({ modelName: 'r-fail', message: 'first' }),
    );
    expect(failed.result).toEqual({ status: 'error', code: 'llm_auth_failed' });
    const error = failed.events.at(-1)!;
    expect(error).toMatchObject({ type: 'error', code: 'llm_auth_failed' });
    expect(JSON.stringify(error)).not.toContain('sk-runner-secret-99');
    const next = await invoke(
      replica(),
      'erin',
      request({ modelName: 'r-fail', message: 'second', session_id: failed.prepared.sessionId }),
    );
    expect(next.result).toEqual({ status: 'done' });
    expect(
      fixture.model
        .requests('r-fail')[1]!
        .body.messages!.slice(1)
        .map((m) => m.content),
    ).toEqual(['first', 'second']);
    const { rows } = await fixture.db.query<{ status: string; error_code: string | null }>(
      'SELECT status, error_code FROM agent_runs WHERE session_id = $1 ORDER BY started_at',
      [failed.prepared.sessionId],
    );
    expect(rows).toEqual([
      { status: 'error', error_code: 'llm_auth_failed' },
      { status: 'done', error_code: null },
    ]);
    expect(logLines.join('')).not.toContain('sk-runner-secret-99');
  });

  it("fits a source's fill tools into the room the others leave, names them first, and says what was left out", async () => {
    const tool = (name: string): AgentTool => ({
      name,
      description: `Tool ${name}.`,
      parameters: { type: 'object' },
      writes: false,
      execute: async () => ({ content: 'ok' }),
    });
    // As the node tools capability answers: a device tool named like another source's tool
    // keeps the name; the other is skipped.
    const devices: ToolSource = async () => ({
      fillTools: ['shared', 'd0', 'd1', 'd2', 'd3', 'd4'].map(tool),
      limits: ['the tools of 1 more of your devices were not offered (at most 1 devices per run)'],
    });
    const others: ToolSource = async () => [tool('s0'), tool('s1'), tool('shared')];
    const runner = new AgentRunner({
      db: fixture.db,
      ephemeral: fixture.ephemeral,
      logger: createLogger({ level: 'silent' }),
      toolSources: [devices, others],
      settings: { maxTools: 8 },
    });
    fixture.model.script('r-fill', [textReply('Fitted.')]);
    const { events, result } = await invoke(runner, 'fay', request({ modelName: 'r-fill' }));
    expect(result).toEqual({ status: 'done' });
    // Eight in the run (propose_plan is not offered in agent mode): both other tools stay,
    // the device tools fill the rest from the first.
    const offered = fixture.model.requests('r-fill')[0]!.body.tools!.map((t) => t.function.name);
    expect(offered).toEqual(['write_todos', 'shared', 'd0', 'd1', 'd2', 's0', 's1']);
    expect(events.find((e) => e.type === 'notice')).toEqual({
      type: 'notice',
      code: 'tools_limited',
      message:
        "This run: the tools of 1 more of your devices were not offered (at most 1 devices per run); 2 tools were left out (at most 8 tools per run: 2 of your devices', 0 of other sources).",
    });
  });

  it('hands a run over mid-answer: nothing more stored or sent, its lease freed, adopted from its last step', async () => {
    fixture.model.script('r-handover', [
      toolCallsReply([{ id: 'h1', name: 'write_todos', args: { todos: [{ content: 'One' }] } }]),
      { kind: 'stream', pieces: [{ text: 'cut here' }, { waitFor: new Promise(() => {}) }] },
      textReply('Whole answer.'),
    ]);
    const runner = replica();
    const prepared = await runner.prepare({
      ...request({ modelName: 'r-handover', message: 'go' }),
      userId: 'carl',
    });
    const events: AgentEvent[] = [];
    const controller = new AbortController();
    const running = prepared.execute((e) => events.push(e), controller.signal);
    await fixture.model.waitForRequests('r-handover', 2);
    while (!events.some((e) => e.type === 'message_chunk')) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    controller.abort(new RunHandOver());
    expect(await running).toEqual({ status: 'handed_over' });
    // No final event, no cut text stored, the session free, the run still going.
    expect(events.at(-1)).toMatchObject({ type: 'message_chunk', content: 'cut here' });
    expect(await sessionLeaseHolder(fixture.ephemeral, 'carl', prepared.sessionId)).toBeNull();
    const stored = await runner.runs.load(prepared.runId);
    expect(stored).toMatchObject({ status: 'running', state: { step: 1 } });
    const messages = await runner.sessions.messages({
      userId: 'carl',
      sessionId: prepared.sessionId,
    });
    expect(JSON.stringify(messages)).not.toContain('cut here');

    const adopted = await replica().adopt(prepared.runId, { exclusive: true });
    const rest: AgentEvent[] = [];
    expect(await adopted!.execute((e) => rest.push(e), new AbortController().signal)).toEqual({
      status: 'done',
    });
    expect(rest.at(-1)).toMatchObject({ type: 'done' });
    const third = fixture.model.requests('r-handover')[2]!.body.messages!;
    expect(third.slice(1).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });
});

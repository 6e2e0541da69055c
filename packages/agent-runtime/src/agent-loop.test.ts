import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '@agent-backend/logger';
import { z } from 'zod';
import type { AgentEvent, ConversationMode } from '@agent-backend/protocol';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ScriptStep,
} from '@agent-backend/testing';
import { runAgentLoop } from './agent-loop.js';
import { defineTool } from './builtin-tool.js';
import type { ChatMessage } from './chat-message.js';
import { AgentRunError } from './errors.js';
import { createLlmClient } from './llm-client.js';
import { TurnAbortedError } from './model-turn.js';
import { proposePlanTool, writeTodosTool } from './planning-tools.js';
import { ToolRegistry, type AgentTool } from './tool.js';
import type { BeforeToolCall, ToolCallDecision } from './tool-execution.js';

let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
afterAll(async () => {
  await model.close();
});

const received: Array<Record<string, unknown>> = [];
const echo = defineTool({
  name: 'echo',
  description: 'Echoes text',
  schema: z.object({ text: z.string() }),
  writes: false,
  run: ({ text }) => {
    received.push({ text });
    return { content: `echo: ${text}` };
  },
});
const send = defineTool({
  name: 'send_email',
  description: 'Sends an email',
  schema: z.object({ to: z.string() }),
  writes: true,
  run: () => ({ content: 'sent' }),
});
const broken: AgentTool = {
  name: 'broken',
  description: 'Always throws',
  parameters: { type: 'object' },
  writes: false,
  execute: async () => {
    throw new Error('disk on fire');
  },
};

let counter = 0;
async function run(
  steps: ScriptStep[],
  options: {
    mode?: ConversationMode;
    tools?: AgentTool[];
    maxSteps?: number;
    beforeToolCall?: BeforeToolCall;
    signal?: AbortSignal;
    maxParallelTools?: number;
    recordTurn?: (assistant: ChatMessage, step: number) => Promise<void>;
    logger?: Logger;
    durable?: () => Promise<void>;
  } = {},
) {
  const name = `loop-${++counter}`;
  model.script(name, steps);
  const registry = new ToolRegistry();
  for (const tool of options.tools ?? [echo, send, broken, writeTodosTool(), proposePlanTool()]) {
    registry.add(tool);
  }
  const events: AgentEvent[] = [];
  const committed: ChatMessage[][] = [];
  const state = { todos: [] };
  const outcome = await runAgentLoop({
    client: await createLlmClient({
      baseUrl: model.baseUrl,
      apiKey: 'k',
      modelName: name,
      temperature: 0,
    }),
    model: name,
    temperature: 0,
    apiKey: 'k',
    messages: [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
    ],
    registry,
    context: {
      userId: 'u',
      sessionId: 's',
      runId: 'r',
      mode: options.mode ?? 'agent',
      signal: options.signal ?? new AbortController().signal,
      state,
      emit: (e) => events.push(e),
    },
    maxSteps: options.maxSteps ?? 5,
    idleTimeoutMs: 5_000,
    maxToolResultChars: 1_000,
    ...(options.maxParallelTools ? { maxParallelTools: options.maxParallelTools } : {}),
    ...(options.beforeToolCall ? { beforeToolCall: options.beforeToolCall } : {}),
    ...(options.recordTurn ? { recordTurn: options.recordTurn } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.durable ? { durable: options.durable } : {}),
    emit: (e) => events.push(e),
    commit: async (messages) => {
      committed.push(messages);
    },
  }).then(
    () => 'finished' as const,
    (error: unknown) => error,
  );
  return { outcome, events, committed, requests: model.requests(name), state };
}

const toolMessages = (messages: Array<Record<string, unknown>> | undefined) =>
  (messages ?? []).filter((m) => m.role === 'tool');

describe('the agent loop', () => {
  it('answers every tool call with one tool message before the next request, whatever happened to it', async () => {
    const { outcome, events, committed, requests } = await run([
      {
        kind: 'stream',
        pieces: [
          { toolCall: { index: 0, id: 'c_ok', name: 'echo', arguments: '{"text":"hi"}' } },
          { toolCall: { index: 1, id: 'c_unknown', name: 'teleport', arguments: '{}' } },
          { toolCall: { index: 2, id: 'c_json', name: 'echo', arguments: '{"text": oops' } },
          { toolCall: { index: 3, id: 'c_args', name: 'echo', arguments: '{"text": 42}' } },
          { toolCall: { index: 4, id: 'c_throw', name: 'broken', arguments: '{}' } },
          { finish: 'tool_calls' },
        ],
      },
      textReply('All done.'),
    ]);
    expect(outcome).toBe('finished');
    const tools = toolMessages(requests[1]!.body.messages);
    expect(tools.map((m) => m.tool_call_id)).toEqual([
      'c_ok',
      'c_unknown',
      'c_json',
      'c_args',
      'c_throw',
    ]);
    expect(tools.map((m) => m.content)).toEqual([
      'echo: hi',
      'Unknown tool "teleport".',
      'The arguments are not a JSON object.',
      expect.stringMatching(/^Invalid arguments for echo: text: /),
      'The tool failed: disk on fire',
    ]);
    // Results stream as the calls finish; the stored order above is the model's.
    const isError = Object.fromEntries(
      events.flatMap((e) => (e.type === 'tool_result' ? [[e.tool_call_id, e.is_error]] : [])),
    );
    expect(isError).toEqual({
      c_ok: undefined,
      c_unknown: true,
      c_json: true,
      c_args: true,
      c_throw: true,
    });
    expect(events.find((e) => e.type === 'tool_call' && e.tool_call_id === 'c_json')).toMatchObject(
      {
        tool_args: {},
      },
    );
    expect(committed.map((turn) => turn.map((m) => m.role))).toEqual([
      ['assistant', 'tool', 'tool', 'tool', 'tool', 'tool'],
      ['assistant'],
    ]);
  });

  it('offers only read tools in ask mode and refuses a write tool the model calls anyway', async () => {
    const { events, requests } = await run(
      [
        toolCallsReply([{ id: 'w', name: 'send_email', args: { to: 'x@example.com' } }]),
        textReply('I cannot send it in ask mode.'),
      ],
      { mode: 'ask' },
    );
    expect(requests[0]!.body.tools!.map((t) => t.function.name).sort()).toEqual(['broken', 'echo']);
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({
      is_error: true,
      result:
        'send_email changes things outside the conversation and is not available in ask mode.',
    });
  });

  it('offers read tools and propose_plan in plan mode, never runs writes, and ends after proposing', async () => {
    const { outcome, events, requests, state } = await run(
      [
        toolCallsReply([
          { id: 'w', name: 'send_email', args: { to: 'x' } },
          {
            id: 'p',
            name: 'propose_plan',
            args: { summary: 'Email Bob', steps: ['Draft', 'Send'] },
          },
        ]),
      ],
      { mode: 'plan' },
    );
    expect(outcome).toBe('finished');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.tools!.map((t) => t.function.name).sort()).toEqual([
      'broken',
      'echo',
      'propose_plan',
    ]);
    expect(events.filter((e) => e.type === 'plan')).toEqual([
      { type: 'plan', status: 'proposed', summary: 'Email Bob', steps: ['Draft', 'Send'] },
    ]);
    expect(events.find((e) => e.type === 'tool_result' && e.tool_call_id === 'w')).toMatchObject({
      is_error: true,
    });
    expect(state).toEqual({
      todos: [],
      pendingPlan: { summary: 'Email Bob', steps: ['Draft', 'Send'] },
    });
  });

  it('lets the beforeToolCall hook skip a call or change its arguments', async () => {
    received.length = 0;
    const seen: string[] = [];
    const { requests } = await run(
      [
        toolCallsReply([
          { id: 'a', name: 'echo', args: { text: 'first' } },
          { id: 'b', name: 'echo', args: { text: 'second' } },
        ]),
        textReply('ok'),
      ],
      {
        beforeToolCall: async (call) => {
          seen.push(`${call.id}:${call.name}:${JSON.stringify(call.args)}`);
          return call.id === 'a'
            ? { action: 'skip', message: 'The user rejected this call.' }
            : { action: 'run', args: { text: 'edited' } };
        },
      },
    );
    expect(seen).toEqual(['a:echo:{"text":"first"}', 'b:echo:{"text":"second"}']);
    expect(received).toEqual([{ text: 'edited' }]);
    expect(toolMessages(requests[1]!.body.messages).map((m) => m.content)).toEqual([
      'The user rejected this call.',
      'echo: edited',
    ]);
  });

  it('stops with max_steps_exceeded after the step budget, with every turn committed', async () => {
    const call = toolCallsReply([{ name: 'echo', args: { text: 'again' } }]);
    const { outcome, committed, requests } = await run([call, call, call, call], { maxSteps: 3 });
    expect(outcome).toBeInstanceOf(AgentRunError);
    expect((outcome as AgentRunError).code).toBe('max_steps_exceeded');
    expect(requests).toHaveLength(3);
    expect(committed).toHaveLength(3);
  });

  it('stops a tool that ignores the abort and still gives every call of the turn a tool message', async () => {
    const controller = new AbortController();
    const slow: AgentTool = {
      name: 'slow',
      description: 'Takes forever',
      parameters: { type: 'object' },
      writes: false,
      execute: () => {
        setTimeout(() => controller.abort(), 50);
        return new Promise(() => {});
      },
    };
    const { outcome, committed, requests } = await run(
      [
        toolCallsReply([
          { id: 's1', name: 'slow', args: {} },
          { id: 's2', name: 'slow', args: {} },
        ]),
      ],
      { tools: [slow], signal: controller.signal },
    );
    expect(outcome).toBeInstanceOf(TurnAbortedError);
    expect(requests).toHaveLength(1);
    expect(committed).toHaveLength(1);
    expect(committed[0]!.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 's1', content: 'Cancelled: the run was stopped.' },
      { role: 'tool', tool_call_id: 's2', content: 'Cancelled: the run was stopped.' },
    ]);
  });
});

/** A promise and its resolver. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves once `condition` holds (checked every few ms); fails the test after 5 s. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition never held');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const resultOrder = (events: AgentEvent[]) =>
  events.flatMap((e) => (e.type === 'tool_result' ? [e.tool_call_id] : []));

describe('the tool calls of one turn', () => {
  it('run at once, stream each result as it completes, and are stored in the model’s order', async () => {
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof deferred<string>>>();
    const gated: AgentTool = {
      name: 'gated',
      description: 'Finishes when the test says',
      parameters: { type: 'object' },
      writes: false,
      execute: async (args) => {
        const key = String(args.key);
        started.push(key);
        const gate = deferred<string>();
        gates.set(key, gate);
        // Only possible when all three run at once: then they are finished backwards.
        if (started.length === 3) {
          void (async () => {
            for (const k of ['c', 'b', 'a']) {
              gates.get(k)!.resolve(`done ${k}`);
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
          })();
        }
        return { content: await gate.promise };
      },
    };
    const pending = run(
      [
        toolCallsReply([
          { id: 'a', name: 'gated', args: { key: 'a' } },
          { id: 'b', name: 'gated', args: { key: 'b' } },
          { id: 'c', name: 'gated', args: { key: 'c' } },
        ]),
        textReply('ok'),
      ],
      { tools: [gated], maxParallelTools: 3 },
    );
    const { outcome, events, committed, requests } = await pending;
    expect(outcome).toBe('finished');
    expect(started).toEqual(['a', 'b', 'c']);
    expect(events.filter((e) => e.type === 'tool_call').map((e) => e.tool_call_id)).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(resultOrder(events)).toEqual(['c', 'b', 'a']);
    expect(committed[0]!.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'done a' },
      { role: 'tool', tool_call_id: 'b', content: 'done b' },
      { role: 'tool', tool_call_id: 'c', content: 'done c' },
    ]);
    expect(toolMessages(requests[1]!.body.messages).map((m) => m.tool_call_id)).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('never run more than maxParallelTools at a time, and a tool that is not parallel-safe alone', async () => {
    let inFlight = 0;
    let peak = 0;
    const log: string[] = [];
    const tool = (name: string, parallelSafe: boolean): AgentTool => ({
      name,
      description: name,
      parameters: { type: 'object' },
      writes: false,
      parallelSafe,
      execute: async (args) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        log.push(`start ${String(args.n)}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        log.push(`end ${String(args.n)}`);
        inFlight--;
        return { content: `ok ${String(args.n)}` };
      },
    });
    const calls = [1, 2, 3, 4, 5].map((n) => ({
      id: `c${n}`,
      name: n === 3 ? 'alone' : 'shared',
      args: { n },
    }));
    const { outcome, committed } = await run([toolCallsReply(calls), textReply('ok')], {
      tools: [tool('shared', true), tool('alone', false)],
      maxParallelTools: 2,
    });
    expect(outcome).toBe('finished');
    expect(peak).toBe(2);
    // `alone` starts once 1 and 2 ended, and 4 and 5 start only after it ended.
    const at = log.indexOf('start 3');
    expect(log[at + 1]).toBe('end 3');
    expect(log.slice(0, at).sort()).toEqual(['end 1', 'end 2', 'start 1', 'start 2']);
    expect(committed[0]!.slice(1).map((m) => m.content)).toEqual([
      'ok 1',
      'ok 2',
      'ok 3',
      'ok 4',
      'ok 5',
    ]);
  });

  it('ask the hook about every call together, and each runs as soon as its own answer came', async () => {
    received.length = 0;
    const asked: string[] = [];
    const answers = new Map<string, ReturnType<typeof deferred<ToolCallDecision>>>();
    const hook: BeforeToolCall = async (call) => {
      asked.push(call.id);
      if (call.id === 'free') return { action: 'run', args: call.args };
      const answer = deferred<ToolCallDecision>();
      answers.set(call.id, answer);
      return answer.promise;
    };
    const decide = (async () => {
      // Both held calls were asked about before any answer, and the free one did not wait.
      await until(() => answers.size === 2 && received.length === 1);
      expect(asked).toEqual(['held1', 'free', 'held2']);
      answers.get('held2')!.resolve({ action: 'run', args: { text: 'second held' } });
      await until(() => received.length === 2);
      answers.get('held1')!.resolve({ action: 'skip', message: 'Rejected.' });
    })();
    const { outcome, events, committed } = await run(
      [
        toolCallsReply([
          { id: 'held1', name: 'echo', args: { text: 'first held' } },
          { id: 'free', name: 'echo', args: { text: 'free' } },
          { id: 'held2', name: 'echo', args: { text: 'held' } },
        ]),
        textReply('ok'),
      ],
      { beforeToolCall: hook },
    );
    await decide;
    expect(outcome).toBe('finished');
    expect(received).toEqual([{ text: 'free' }, { text: 'second held' }]);
    expect(resultOrder(events)).toEqual(['free', 'held2', 'held1']);
    expect(committed[0]!.slice(1).map((m) => m.content)).toEqual([
      'Rejected.',
      'echo: free',
      'echo: second held',
    ]);
  });

  it('give every call one tool message when the run is aborted mid-turn, whatever each was doing', async () => {
    received.length = 0;
    const controller = new AbortController();
    let hanging = 0;
    const hang: AgentTool = {
      name: 'hang',
      description: 'Never answers',
      parameters: { type: 'object' },
      writes: false,
      execute: () => {
        hanging++;
        return new Promise(() => {});
      },
    };
    const held: AgentTool = { ...hang, name: 'held' };
    const neverDecided: BeforeToolCall = (call) =>
      call.name !== 'held'
        ? Promise.resolve({ action: 'run', args: call.args })
        : new Promise((resolve) =>
            controller.signal.addEventListener('abort', () =>
              resolve({ action: 'skip', message: 'Cancelled while waiting.' }),
            ),
          );
    // Two slots: `quick` ends, `running` and `running2` hang in the slots, `queued` waits for
    // one, `waiting` waits for its approval.
    const abortMidTurn = (async () => {
      await until(() => received.length === 1 && hanging === 2);
      controller.abort();
    })();
    const { outcome, committed } = await run(
      [
        toolCallsReply([
          { id: 'quick', name: 'echo', args: { text: 'quick' } },
          { id: 'running', name: 'hang', args: {} },
          { id: 'running2', name: 'hang', args: {} },
          { id: 'queued', name: 'hang', args: {} },
          { id: 'waiting', name: 'held', args: {} },
        ]),
      ],
      {
        tools: [echo, hang, held],
        beforeToolCall: neverDecided,
        signal: controller.signal,
        maxParallelTools: 2,
      },
    );
    await abortMidTurn;
    expect(outcome).toBeInstanceOf(TurnAbortedError);
    expect(hanging).toBe(2);
    expect(committed).toHaveLength(1);
    const cancelled = 'Cancelled: the run was stopped.';
    expect(committed[0]!.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'quick', content: 'echo: quick' },
      { role: 'tool', tool_call_id: 'running', content: cancelled },
      { role: 'tool', tool_call_id: 'running2', content: cancelled },
      { role: 'tool', tool_call_id: 'queued', content: cancelled },
      { role: 'tool', tool_call_id: 'waiting', content: 'Cancelled while waiting.' },
    ]);
  });

  it('run one after the other, each asked about after the previous finished, with maxParallelTools 1', async () => {
    const log: string[] = [];
    const logged: AgentTool = {
      name: 'logged',
      description: 'Logs',
      parameters: { type: 'object' },
      writes: false,
      execute: async (args) => {
        log.push(`run ${String(args.n)}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { content: 'ok' };
      },
    };
    const { outcome, events } = await run(
      [
        toolCallsReply([
          { id: 'x1', name: 'logged', args: { n: 1 } },
          { id: 'x2', name: 'logged', args: { n: 2 } },
        ]),
        textReply('ok'),
      ],
      {
        tools: [logged],
        maxParallelTools: 1,
        beforeToolCall: async (call) => {
          log.push(`ask ${String(call.args.n)}`);
          return { action: 'run', args: call.args };
        },
      },
    );
    expect(outcome).toBe('finished');
    expect(log).toEqual(['ask 1', 'run 1', 'ask 2', 'run 2']);
    expect(events.filter((e) => e.type.startsWith('tool_')).map((e) => e.type)).toEqual([
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
    ]);
  });

  it('records a turn of several calls before its first call runs, only when they run one after the other', async () => {
    const log: string[] = [];
    const recorded: Array<{ assistant: ChatMessage; step: number }> = [];
    const logged: AgentTool = {
      name: 'logged',
      description: 'Logs',
      parameters: { type: 'object' },
      writes: false,
      execute: async (args) => {
        log.push(`run ${String(args.n)}`);
        return { content: 'ok' };
      },
    };
    const turn = () =>
      toolCallsReply([
        { id: 'r1', name: 'logged', args: { n: 1 } },
        { id: 'r2', name: 'logged', args: { n: 2 } },
      ]);
    const recordTurn = async (assistant: ChatMessage, step: number) => {
      log.push('record');
      recorded.push({ assistant, step });
    };
    const single = toolCallsReply([{ id: 'r3', name: 'logged', args: { n: 3 } }]);
    const serial = await run([single, turn(), textReply('ok')], {
      tools: [logged],
      maxParallelTools: 1,
      recordTurn,
    });
    expect(serial.outcome).toBe('finished');
    // A turn of one call has nothing that could be lost; the turn of two is recorded first.
    expect(log).toEqual(['run 3', 'record', 'run 1', 'run 2']);
    expect(recorded).toEqual([
      {
        step: 2,
        assistant: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'r1', type: 'function', function: { name: 'logged', arguments: '{"n":1}' } },
            { id: 'r2', type: 'function', function: { name: 'logged', arguments: '{"n":2}' } },
          ],
        },
      },
    ]);
    log.length = 0;
    const parallel = await run([turn(), textReply('ok')], {
      tools: [logged],
      maxParallelTools: 3,
      recordTurn,
    });
    expect(parallel.outcome).toBe('finished');
    expect(log).not.toContain('record');
  });
  it('runs a repeat-safe tool without waiting for its tool_call to be durable; any other tool waits', async () => {
    const log: string[] = [];
    const logTool = (name: string, repeatSafe: boolean) =>
      defineTool({
        name,
        description: name,
        schema: z.object({}),
        writes: false,
        repeatSafe,
        run: () => {
          log.push(`run ${name}`);
          return { content: 'ok' };
        },
      });
    // The run log answers only once the test says so.
    let logged!: () => void;
    const appended = new Promise<void>((resolve) => (logged = resolve));
    const durable = async () => {
      log.push('durable?');
      await appended;
    };
    const safe = run(
      [toolCallsReply([{ id: 's1', name: 'todo_like', args: {} }]), textReply('ok')],
      { tools: [logTool('todo_like', true)], durable },
    );
    const waited = new Promise((resolve) => setTimeout(() => resolve('waited for the log'), 5_000));
    expect(await Promise.race([safe.then((r) => r.outcome), waited])).toBe('finished');
    expect(log).toEqual(['run todo_like']);
    log.length = 0;
    const other = run(
      [toolCallsReply([{ id: 'o1', name: 'side_effect', args: {} }]), textReply('ok')],
      { tools: [logTool('side_effect', false)], durable },
    );
    while (!log.includes('durable?')) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(log).toEqual(['durable?']);
    logged();
    expect((await other).outcome).toBe('finished');
    expect(log).toEqual(['durable?', 'run side_effect']);
  });
  it('goes on when the turn record cannot be written (the store down): it only serves a takeover', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      destination: new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    });
    const { outcome, committed } = await run(
      [
        toolCallsReply([
          { id: 'f1', name: 'echo', args: { text: 'one' } },
          { id: 'f2', name: 'echo', args: { text: 'two' } },
        ]),
        textReply('Both done.'),
      ],
      {
        maxParallelTools: 1,
        logger,
        recordTurn: async () => {
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), {
            code: 'ECONNREFUSED',
          });
        },
      },
    );
    expect(outcome).toBe('finished');
    expect(toolMessages(committed[0]).map((m) => m.content)).toEqual(['echo: one', 'echo: two']);
    expect(committed.at(-1)).toEqual([{ role: 'assistant', content: 'Both done.' }]);
    const warning = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.step === 1);
    expect(warning).toMatchObject({
      level: 'warn',
      runId: 'r',
      msg: expect.stringContaining('turn record'),
    });
  });
});

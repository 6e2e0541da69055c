import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import type { BeforeToolCall } from './tool-execution.js';

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
    ...(options.beforeToolCall ? { beforeToolCall: options.beforeToolCall } : {}),
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
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((e) => (e as { is_error?: boolean }).is_error)).toEqual([
      undefined,
      true,
      true,
      true,
      true,
    ]);
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

/**
 * Tool-call stream shapes that real OpenAI-compatible providers and proxies send,
 * through the real service: invoke over HTTP, events over SSE, the scripted model sending
 * exactly those chunks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, type ScriptStep } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const todos = (...contents: string[]) => ({ todos: contents.map((content) => ({ content })) });

describe('agent: provider tool-call stream shapes', () => {
  let cluster: AgentCluster;
  let token: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-shapes',
    modelName,
  });

  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    token = await cluster.token('shaun');
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  /** Runs `step` then a text answer; the run's events and the model's second request. */
  async function run(modelName: string, step: ScriptStep) {
    cluster.model.script(modelName, [step, textReply('All written.')]);
    const stream = await invoke(cluster.api[0]!.url, token, {
      message: 'Plan it',
      llm_config: llm(modelName),
    });
    const events = (await stream.ended).map((e) => e.data);
    const requests = cluster.model.requests(modelName);
    return { events, followUp: requests[1] };
  }

  const toolMessages = (messages: Array<Record<string, unknown>>) =>
    messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content]);

  it('uses function.arguments sent as a JSON object, not its text', async () => {
    const { events, followUp } = await run('shape-object', {
      kind: 'stream',
      pieces: [
        {
          toolCall: { index: 0, id: 'call_obj', name: 'write_todos', arguments: todos('Pack') },
        },
        { finish: 'tool_calls' },
      ],
    });
    expect(events.map((e) => e.type)).toEqual([
      'session',
      'tool_call',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(events[1]).toEqual({
      type: 'tool_call',
      tool_name: 'write_todos',
      tool_args: todos('Pack'),
      tool_call_id: 'call_obj',
    });
    expect(events[2]).toEqual({ type: 'todos', todos: [{ content: 'Pack', status: 'pending' }] });
    expect(events[3]).toMatchObject({ type: 'tool_result', tool_call_id: 'call_obj' });
    expect(events[3]).not.toMatchObject({ is_error: true });
    // The model is given its call back with the arguments as JSON text, and the tool's result.
    const messages = followUp!.body.messages!;
    const assistant = messages.find((m) => Array.isArray(m.tool_calls))!;
    expect(assistant.tool_calls).toEqual([
      expect.objectContaining({
        id: 'call_obj',
        function: { name: 'write_todos', arguments: JSON.stringify(todos('Pack')) },
      }),
    ]);
    const [[, content]] = toolMessages(messages) as [[string, string]];
    expect(content).not.toMatch(/not a JSON object/);
    const text = events.filter((e) => e.type === 'message_chunk').map((e) => e.content);
    expect(text.join('')).toBe('All written.');
  });

  it('runs both of two tool calls that share index 0 with different ids', async () => {
    const first = JSON.stringify(todos('Pack'));
    const second = JSON.stringify(todos('Pack', 'Leave'));
    const { events, followUp } = await run('shape-index', {
      kind: 'stream',
      pieces: [
        { toolCall: { index: 0, id: 'call_one', name: 'write_todos', arguments: '' } },
        { toolCall: { index: 0, arguments: first.slice(0, 9) } },
        { toolCall: { index: 0, arguments: first.slice(9) } },
        { toolCall: { index: 0, id: 'call_two', name: 'write_todos', arguments: '' } },
        { toolCall: { index: 0, arguments: second.slice(0, 12) } },
        { toolCall: { index: 0, arguments: second.slice(12) } },
        { finish: 'tool_calls' },
      ],
    });
    const calls = events.filter((e) => e.type === 'tool_call');
    expect(calls).toEqual([
      {
        type: 'tool_call',
        tool_name: 'write_todos',
        tool_args: todos('Pack'),
        tool_call_id: 'call_one',
      },
      {
        type: 'tool_call',
        tool_name: 'write_todos',
        tool_args: todos('Pack', 'Leave'),
        tool_call_id: 'call_two',
      },
    ]);
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((e) => e.tool_call_id).sort()).toEqual(['call_one', 'call_two']);
    for (const result of results) expect(result).not.toMatchObject({ is_error: true });
    expect(events.filter((e) => e.type === 'todos').map((e) => e.todos)).toEqual(
      expect.arrayContaining([
        [
          { content: 'Pack', status: 'pending' },
          { content: 'Leave', status: 'pending' },
        ],
      ]),
    );
    expect(toolMessages(followUp!.body.messages!).map(([id]) => id)).toEqual([
      'call_one',
      'call_two',
    ]);
    expect(events.at(-1)!.type).toBe('done');
    const text = events.filter((e) => e.type === 'message_chunk').map((e) => e.content);
    expect(text.join('')).toBe('All written.');
  });
});

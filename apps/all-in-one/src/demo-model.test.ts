import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nextStep, startDemoModel, type ChatMessage, type DemoModel } from './demo-model.js';

const tools = (...names: string[]) => names.map((name) => ({ function: { name } }));
const user = (content: string): ChatMessage => ({ role: 'user', content });
const called = (id: string, name: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, function: { name, arguments: '{}' } }],
});
const result = (id: string, content: string): ChatMessage => ({
  role: 'tool',
  tool_call_id: id,
  content,
});

describe('demo model script', () => {
  const offered = tools('write_todos', 'screenshot', 'echo');

  it('writes todos, calls the node, closes the todos, then answers quoting the node', () => {
    const messages: ChatMessage[] = [user('What is on my screen?')];
    expect(nextStep({ messages, tools: offered }).call).toMatchObject({
      name: 'write_todos',
      args: { todos: [{ status: 'in_progress' }, { status: 'pending' }] },
    });
    messages.push(called('a', 'write_todos'), result('a', 'ok'));
    expect(nextStep({ messages, tools: offered }).call).toEqual({ name: 'screenshot', args: {} });
    messages.push(called('b', 'screenshot'), result('b', 'screenshot taken'));
    expect(nextStep({ messages, tools: offered }).call).toMatchObject({
      name: 'write_todos',
      args: { todos: [{ status: 'completed' }, { status: 'completed' }] },
    });
    messages.push(called('c', 'write_todos'), result('c', 'ok'));
    const answer = nextStep({ messages, tools: offered });
    expect(answer.call).toBeUndefined();
    expect(answer.text).toContain('You asked: "What is on my screen?"');
    expect(answer.text).toContain('answered: "screenshot taken"');
  });

  it('starts over at the next user message, and uses a suffixed node tool name', () => {
    const messages: ChatMessage[] = [
      user('first'),
      called('a', 'write_todos'),
      result('a', 'ok'),
      { role: 'assistant', content: 'done' },
      user('second'),
    ];
    expect(nextStep({ messages, tools: tools('screenshot__1a2b3c4d') }).call).toEqual({
      name: 'screenshot__1a2b3c4d',
      args: {},
    });
  });

  it('answers without tools when no node is connected, and proposes a plan in plan mode', () => {
    expect(nextStep({ messages: [user('hi')], tools: [] }).text).toContain(
      'No desktop node is connected',
    );
    const plan = nextStep({ messages: [user('hi')], tools: tools('propose_plan', 'write_todos') });
    expect(plan.call?.name).toBe('propose_plan');
  });
});

describe('demo model directives', () => {
  it('`echo <text>` calls echo with the text, skipping the todos, then quotes its result', () => {
    const offered = tools('write_todos', 'screenshot', 'echo__1a2b3c4d');
    const messages: ChatMessage[] = [user('echo: hello there')];
    expect(nextStep({ messages, tools: offered }).call).toEqual({
      name: 'echo__1a2b3c4d',
      args: { text: 'hello there' },
    });
    messages.push(called('a', 'echo__1a2b3c4d'), result('a', 'edited text'));
    const answer = nextStep({ messages, tools: offered });
    expect(answer.call).toBeUndefined();
    expect(answer.text).toContain('echo__1a2b3c4d answered: "edited text"');
  });

  it('`remember <fact>` calls memory_save only when memory is on', () => {
    const messages: ChatMessage[] = [user('Remember I drink green tea')];
    expect(nextStep({ messages, tools: tools('write_todos', 'memory_save') }).call).toEqual({
      name: 'memory_save',
      args: { text: 'I drink green tea', tags: ['demo'] },
    });
    expect(nextStep({ messages, tools: tools('write_todos') }).call?.name).toBe('write_todos');
    messages.push(called('a', 'memory_save'), result('a', 'Saved as memory m1.'));
    expect(nextStep({ messages, tools: tools('memory_save') }).text).toContain(
      'memory_save answered: "Saved as memory m1."',
    );
  });
});

describe('demo model over HTTP (the openai client)', () => {
  let model: DemoModel;
  beforeAll(async () => {
    model = await startDemoModel();
  });
  afterAll(() => model.close());

  it('streams text and a tool call in the chat-completions wire format', async () => {
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'demo' });
    const stream = await client.chat.completions.create({
      model: 'demo-scripted',
      stream: true,
      messages: [{ role: 'user', content: 'hello' }],
      tools: [{ type: 'function', function: { name: 'echo', parameters: { type: 'object' } } }],
    });
    let text = '';
    let call = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? '';
      call += choice?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      finish = choice?.finish_reason ?? finish;
    }
    expect(text).toBe('I will call echo on your desktop node. ');
    expect(JSON.parse(call)).toEqual({ text: 'hello' });
    expect(finish).toBe('tool_calls');
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['demo-scripted']);
  });
});

import { describe, expect, it } from 'vitest';
import { proposePlanTool, writeTodosTool } from './planning-tools.js';

describe('planning tools', () => {
  it('are built once per process (no JSON Schema generated per run), and keep no run state', async () => {
    expect(writeTodosTool()).toBe(writeTodosTool());
    expect(proposePlanTool()).toBe(proposePlanTool());
    const events: unknown[] = [];
    const context = (state: { todos: never[] }) => ({
      userId: 'u',
      sessionId: 's',
      runId: 'r',
      mode: 'agent' as const,
      signal: new AbortController().signal,
      state,
      emit: (event: unknown) => events.push(event),
    });
    const first = { todos: [] as never[] };
    const second = { todos: [] as never[] };
    await writeTodosTool().execute(
      { todos: [{ content: 'a', status: 'pending' }] },
      context(first),
    );
    await writeTodosTool().execute({ todos: [] }, context(second));
    expect(first.todos).toEqual([{ content: 'a', status: 'pending' }]);
    expect(second.todos).toEqual([]);
  });
});

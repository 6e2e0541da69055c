import { describe, expect, it } from 'vitest';
import { NodeCallError, type NodeToolCall, type NodeToolCaller } from '@agent-backend/node-rpc';
import { nodeToolsToAgentTools } from './node-tools.js';
import type { ToolContext } from '@agent-backend/agent-runtime';

/** The smallest NodeToolCaller: records calls and answers from a table (the gateway is not under test here). */
function fakeCaller(
  answers: Record<string, () => Promise<Awaited<ReturnType<NodeToolCaller['callTool']>>>>,
) {
  const calls: NodeToolCall[] = [];
  const caller: NodeToolCaller = {
    listTools: async () => [],
    callTool: async (call) => {
      calls.push(call);
      const answer = answers[call.toolName];
      if (!answer) throw new NodeCallError('node_not_found', 'no node');
      return answer();
    },
  };
  return { caller, calls };
}

const context = (signal = new AbortController().signal): ToolContext => ({
  userId: 'u1',
  sessionId: 's1',
  runId: 'r1',
  mode: 'agent',
  signal,
  state: { todos: [] },
  emit: () => {},
});

describe('node tools', () => {
  it('keeps valid unique names and suffixes clashes and invalid names deterministically', () => {
    const { caller } = fakeCaller({});
    const nodes = [
      {
        nodeId: 'ext-1',
        nodeType: 'extension' as const,
        tools: [{ name: 'click' }, { name: 'read page' }, { name: 'write_todos' }],
      },
      {
        nodeId: 'desk-1',
        nodeType: 'desktop' as const,
        tools: [{ name: 'click' }, { name: 'shell' }],
      },
    ];
    const names = nodeToolsToAgentTools('u1', nodes, caller, new Set(['write_todos'])).map(
      (t) => t.name,
    );
    expect(names[0]).toBe('click');
    expect(names[1]).toMatch(/^read_page__[0-9a-f]{8}$/);
    expect(names[2]).toMatch(/^write_todos__[0-9a-f]{8}$/);
    expect(names[3]).toMatch(/^click__[0-9a-f]{8}$/);
    expect(names[4]).toBe('shell');
    expect(new Set(names).size).toBe(names.length);
    const again = nodeToolsToAgentTools('u1', nodes, caller, new Set(['write_todos'])).map(
      (t) => t.name,
    );
    expect(again).toEqual(names);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('uses rich descriptors where the node sent them and counts every node tool as a write', () => {
    const { caller } = fakeCaller({});
    const schema = { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] };
    const [rich, bare, badSchema] = nodeToolsToAgentTools(
      'u1',
      [
        {
          nodeId: 'ext-1',
          nodeType: 'extension',
          tools: [
            { name: 'open_url', description: 'Opens a URL in a new tab', inputSchema: schema },
            { name: 'screenshot' },
            { name: 'odd', inputSchema: { type: 'string' } },
          ],
        },
      ],
      caller,
      new Set(),
    );
    expect(rich!.parameters).toEqual(schema);
    expect(rich!.description).toBe(
      'Opens a URL in a new tab (runs on the user\'s extension "ext-1")',
    );
    expect(bare!.parameters).toEqual({ type: 'object', additionalProperties: true });
    expect(bare!.description).toBe('Tool "screenshot" on the user\'s extension "ext-1".');
    expect(badSchema!.parameters).toEqual({ type: 'object', additionalProperties: true });
    expect([rich, bare, badSchema].every((t) => t!.writes)).toBe(true);
  });

  it('calls the node that offered the tool, by its original name, with the session and signal', async () => {
    const { caller, calls } = fakeCaller({
      'read page': async () => ({
        success: true,
        text: 'Title: Example',
        images: [{ data: 'AA', mimeType: 'image/png' }],
      }),
      broken: async () => ({ success: false, text: 'element not found', images: [] }),
      flaky: async () => {
        throw new NodeCallError('timeout', 'no answer within 60000 ms');
      },
    });
    const tools = nodeToolsToAgentTools(
      'u1',
      [
        {
          nodeId: 'ext-9',
          nodeType: 'extension',
          tools: [{ name: 'read page' }, { name: 'broken' }, { name: 'flaky' }],
        },
      ],
      caller,
      new Set(),
    );
    const signal = new AbortController().signal;
    expect(await tools[0]!.execute({ tab: 1 }, context(signal))).toEqual({
      content: 'Title: Example\n[1 image(s) returned to the user]',
      isError: false,
      images: [{ data: 'AA', mimeType: 'image/png' }],
    });
    expect(calls[0]).toEqual({
      userId: 'u1',
      nodeType: 'extension',
      nodeId: 'ext-9',
      toolName: 'read page',
      arguments: { tab: 1 },
      sessionId: 's1',
      signal,
    });
    expect(await tools[1]!.execute({}, context())).toEqual({
      content: 'element not found',
      isError: true,
    });
    expect(await tools[2]!.execute({}, context())).toEqual({
      content: 'Node tool failed (timeout): no answer within 60000 ms',
      isError: true,
    });
  });

  it('runs at most max_concurrent_tasks calls of a run on one node, without holding up other nodes', async () => {
    const inFlight = new Map<string, number>();
    const peak = new Map<string, number>();
    let reached = 0;
    const caller: NodeToolCaller = {
      listTools: async () => [],
      callTool: async (call) => {
        reached++;
        const node = call.nodeId!;
        inFlight.set(node, (inFlight.get(node) ?? 0) + 1);
        peak.set(node, Math.max(peak.get(node) ?? 0, inFlight.get(node)!));
        await new Promise((resolve) => setTimeout(resolve, 10));
        inFlight.set(node, inFlight.get(node)! - 1);
        return { success: true, text: `${node} ok`, images: [] };
      },
    };
    const [busy, other] = nodeToolsToAgentTools(
      'u1',
      [
        {
          nodeId: 'ext-1',
          nodeType: 'extension',
          maxConcurrentTasks: 2,
          tools: [{ name: 'read' }],
        },
        { nodeId: 'desk-1', nodeType: 'desktop', maxConcurrentTasks: 3, tools: [{ name: 'ls' }] },
      ],
      caller,
      new Set(),
    );
    const results = await Promise.all([
      ...[1, 2, 3, 4, 5].map(() => busy!.execute({}, context())),
      ...[1, 2, 3].map(() => other!.execute({}, context())),
    ]);
    expect(results.map((r) => r.content)).toEqual([
      ...Array(5).fill('ext-1 ok'),
      ...Array(3).fill('desk-1 ok'),
    ]);
    expect(Object.fromEntries(peak)).toEqual({ 'ext-1': 2, 'desk-1': 3 });

    // A call waiting for the node is cancelled by the run's abort, without reaching the node.
    const controller = new AbortController();
    const first = busy!.execute({}, context());
    const second = busy!.execute({}, context());
    const third = busy!.execute({}, context(controller.signal));
    controller.abort();
    expect(await third).toEqual({ content: 'Cancelled: the run was stopped.', isError: true });
    await Promise.all([first, second]);
    expect(peak.get('ext-1')).toBe(2);
    expect(reached).toBe(10);
  });
});

import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runRequest, type RunContribution, type RunInfo } from '@agent-backend/agent-runtime';
import { createLogger } from '@agent-backend/logger';
import type { NodeToolCaller, NodeTools } from '@agent-backend/node-rpc';
import { nodeToolsCapability } from './capability.js';

const nodes: NodeTools[] = ['a', 'b', 'c'].map((nodeId) => ({
  nodeId,
  nodeType: 'desktop',
  tools: [{ name: `${nodeId}_tool` }, { name: 'write_todos' }],
}));

function quietLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ destination }), lines };
}

const run = (nodeTools: boolean): RunInfo => ({
  userId: 'u1',
  sessionId: 's1',
  runId: 'r1',
  signal: new AbortController().signal,
  reservedToolNames: new Set(['write_todos']),
  request: runRequest({
    userId: 'u1',
    message: 'hi',
    model: {
      name: 'm',
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'k',
      temperature: 0,
      chosenBy: 'operator',
    },
    capabilities: { nodeTools },
  }),
});

describe('node tools capability', () => {
  const caller: NodeToolCaller = {
    listTools: async () => nodes,
    callTool: async () => ({ success: true, text: 'ok', images: [] }),
  };

  it("offers the first nodes' tools as fill tools, renames clashes with built-ins, and says which devices it left out", async () => {
    const { source } = nodeToolsCapability(
      { caller, logger: quietLogger().logger },
      { TOOL_CALL_TIMEOUT_MS: 1_000, AGENT_MAX_TOOL_NODES: 2 },
    );
    const answer = await source(run(true));
    expect(Array.isArray(answer)).toBe(false);
    const contribution = answer as RunContribution;
    const names = contribution.fillTools!.map((tool) => tool.name);
    expect(names).toHaveLength(4);
    expect(names.slice(0, 1)).toEqual(['a_tool']);
    expect(names).toContain('b_tool');
    expect(names).not.toContain('write_todos');
    expect(names.some((name) => name.startsWith('c_'))).toBe(false);
    expect(contribution.tools ?? []).toEqual([]);
    expect(contribution.limits).toEqual([
      'the tools of 1 more of your devices were not offered (at most 2 devices per run)',
    ]);
  });

  it('adds nothing to runs without node tools, and nothing (logged) when nodes cannot be listed', async () => {
    const { source } = nodeToolsCapability(
      { caller, logger: quietLogger().logger },
      { TOOL_CALL_TIMEOUT_MS: 1_000, AGENT_MAX_TOOL_NODES: 2 },
    );
    expect(await source(run(false))).toEqual([]);

    const { logger, lines } = quietLogger();
    const down = nodeToolsCapability(
      {
        caller: {
          ...caller,
          listTools: () => Promise.reject(new Error('redis down')),
        },
        logger,
      },
      { TOOL_CALL_TIMEOUT_MS: 1_000, AGENT_MAX_TOOL_NODES: 2 },
    );
    expect(await down.source(run(true))).toEqual([]);
    expect(lines.join('')).toContain('node tools unavailable for this run');
  });
});

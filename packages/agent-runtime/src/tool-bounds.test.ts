import { describe, expect, it } from 'vitest';
import type { AgentTool } from './tool.js';
import { boundRunTools, nodesOffered, toolsLimitedNotice } from './tool-bounds.js';

const tools = (prefix: string, n: number): AgentTool[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `${prefix}${i}`,
    description: '',
    parameters: { type: 'object' },
    writes: false,
    execute: async () => ({ content: '' }),
  }));
const names = (list: readonly AgentTool[]) => list.map((tool) => tool.name);

describe('run tool bounds', () => {
  it('keeps everything under the bound, in the order built-in, node, source', () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), node: tools('n', 3), source: tools('s', 2) },
      10,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 'n0', 'n1', 'n2', 's0', 's1']);
    expect(leftOut).toEqual({ node: 0, source: 0 });
  });

  it("leaves node tools out first, from the last, to keep the sources' tools", () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), node: tools('n', 10), source: tools('s', 3) },
      8,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 'n0', 'n1', 'n2', 's0', 's1', 's2']);
    expect(leftOut).toEqual({ node: 7, source: 0 });
  });

  it('cuts the last source tools when the sources alone are over the bound; built-ins stay', () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), node: tools('n', 4), source: tools('s', 9) },
      8,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 's0', 's1', 's2', 's3', 's4', 's5']);
    expect(leftOut).toEqual({ node: 4, source: 3 });
  });

  it('offers the first nodes and says what was left out, or nothing when nothing was', () => {
    const nodes = ['a', 'b', 'c'].map((nodeId) => ({
      nodeId,
      nodeType: 'desktop' as const,
      tools: [],
    }));
    const { offered, left } = nodesOffered(nodes, 2);
    expect(offered.map((n) => n.nodeId)).toEqual(['a', 'b']);
    expect(left.map((n) => n.nodeId)).toEqual(['c']);
    expect(
      toolsLimitedNotice({
        nodesLeft: 0,
        maxNodes: 2,
        leftOut: { node: 0, source: 0 },
        maxTools: 8,
      }),
    ).toBeUndefined();
    expect(
      toolsLimitedNotice({
        nodesLeft: 1,
        maxNodes: 2,
        leftOut: { node: 7, source: 0 },
        maxTools: 8,
      }),
    ).toEqual({
      type: 'notice',
      code: 'tools_limited',
      message:
        "This run: the tools of 1 more of your devices were not offered (at most 2 devices per run); 7 tools were left out (at most 8 tools per run: 7 of your devices', 0 of other sources).",
    });
  });
});

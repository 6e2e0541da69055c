import { describe, expect, it } from 'vitest';
import type { AgentTool } from './tool.js';
import { boundRunTools, toolsLimitedNotice } from './tool-bounds.js';

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
  it('keeps everything under the bound, in the order built-in, fill, source', () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), fill: tools('n', 3), source: tools('s', 2) },
      10,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 'n0', 'n1', 'n2', 's0', 's1']);
    expect(leftOut).toEqual({ fill: 0, source: 0 });
  });

  it("leaves fill tools (the devices') out first, from the last, to keep the sources' tools", () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), fill: tools('n', 10), source: tools('s', 3) },
      8,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 'n0', 'n1', 'n2', 's0', 's1', 's2']);
    expect(leftOut).toEqual({ fill: 7, source: 0 });
  });

  it('cuts the last source tools when the sources alone are over the bound; built-ins stay', () => {
    const { kept, leftOut } = boundRunTools(
      { builtIn: tools('b', 2), fill: tools('n', 4), source: tools('s', 9) },
      8,
    );
    expect(names(kept)).toEqual(['b0', 'b1', 's0', 's1', 's2', 's3', 's4', 's5']);
    expect(leftOut).toEqual({ fill: 4, source: 3 });
  });

  it("says the sources' own limits first, then what the bound left out, or nothing when nothing was", () => {
    expect(
      toolsLimitedNotice({ limits: [], leftOut: { fill: 0, source: 0 }, maxTools: 8 }),
    ).toBeUndefined();
    expect(
      toolsLimitedNotice({
        limits: [
          'the tools of 1 more of your devices were not offered (at most 2 devices per run)',
        ],
        leftOut: { fill: 7, source: 0 },
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

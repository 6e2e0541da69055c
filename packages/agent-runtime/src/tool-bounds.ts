import type { NodeTools } from '@agent-backend/node-rpc';
import type { NoticeEvent } from '@agent-backend/protocol';
import type { AgentTool } from './tool.js';

/**
 * Tools one run offers the model. OpenAI's Chat Completions API accepts at most 128 functions
 * in a request; unbounded, 500 nodes of 200 tools each made one run offer 100,001 tools in a
 * 33.7 MB request.
 */
export const DEFAULT_MAX_RUN_TOOLS = 128;
/** A user's nodes whose tools one run offers. */
export const DEFAULT_MAX_TOOL_NODES = 32;

/** The code of the `notice` event of a run that left tools out. */
export const TOOLS_LIMITED_NOTICE = 'tools_limited';

/**
 * The nodes whose tools a run offers: the first `maxNodes` (the caller's order, which is the
 * order the nodes connected in, so a run's tools do not change as newer nodes come and go).
 */
export function nodesOffered(
  nodes: readonly NodeTools[],
  maxNodes: number,
): { offered: readonly NodeTools[]; left: readonly NodeTools[] } {
  return { offered: nodes.slice(0, maxNodes), left: nodes.slice(maxNodes) };
}

export interface RunTools {
  /** The planning tools every run has. */
  readonly builtIn: readonly AgentTool[];
  /** Tools of the user's nodes, node by node in their order. */
  readonly node: readonly AgentTool[];
  /** Tools of the run's other sources (sandbox, knowledge, MCP, ...), in the sources' order. */
  readonly source: readonly AgentTool[];
}

/**
 * Cuts a run's tools to `max`: the built-in tools always stay; the other sources' tools (a few
 * each, chosen by the request: sandbox, knowledge, memory, skills, MCP servers, accounts) come
 * next; node tools fill what is left, in node order. What does not fit is left out from the end
 * of its group (node tools first, then source tools).
 */
export function boundRunTools(
  tools: RunTools,
  max: number,
): { kept: AgentTool[]; leftOut: { node: number; source: number } } {
  const room = Math.max(0, max - tools.builtIn.length);
  const source = tools.source.slice(0, room);
  const node = tools.node.slice(0, room - source.length);
  return {
    kept: [...tools.builtIn, ...node, ...source],
    leftOut: {
      node: tools.node.length - node.length,
      source: tools.source.length - source.length,
    },
  };
}

/** The `notice` of a run whose nodes or tools were cut, or undefined when nothing was. */
export function toolsLimitedNotice(cut: {
  nodesLeft: number;
  maxNodes: number;
  leftOut: { node: number; source: number };
  maxTools: number;
}): NoticeEvent | undefined {
  const parts: string[] = [];
  if (cut.nodesLeft > 0)
    parts.push(
      `the tools of ${cut.nodesLeft} more of your devices were not offered (at most ${cut.maxNodes} devices per run)`,
    );
  const tools = cut.leftOut.node + cut.leftOut.source;
  if (tools > 0)
    parts.push(
      `${tools} tools were left out (at most ${cut.maxTools} tools per run: ${cut.leftOut.node} of your devices', ${cut.leftOut.source} of other sources)`,
    );
  if (parts.length === 0) return undefined;
  return { type: 'notice', code: TOOLS_LIMITED_NOTICE, message: `This run: ${parts.join('; ')}.` };
}

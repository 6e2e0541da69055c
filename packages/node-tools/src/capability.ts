import type { Capability } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import type { NodeToolMetrics } from '@agent-backend/metrics';
import {
  createNodeToolCaller,
  instrumentNodeToolCaller,
  type BusNodeToolCallerOptions,
  type NodeToolCaller,
  type NodeTools,
} from '@agent-backend/node-rpc';
import { nodeToolsToAgentTools } from './node-tools.js';

/** A user's nodes whose tools one run offers (`AGENT_MAX_TOOL_NODES`). */
export const DEFAULT_MAX_TOOL_NODES = 32;

/** A caller made elsewhere, or the bus and presence registry to make one through. */
export type NodeToolsDeps = {
  readonly logger: Logger;
  /** Where each node tool call is counted. @default none */
  readonly metrics?: NodeToolMetrics;
} & ({ readonly caller: NodeToolCaller } | Pick<BusNodeToolCallerOptions, 'bus' | 'presence'>);

/** The configuration keys the capability reads (a subset of the service config). */
export interface NodeToolsSettings {
  readonly TOOL_CALL_TIMEOUT_MS: number;
  readonly AGENT_MAX_TOOL_NODES: number;
}

export interface NodeToolsCapability extends Capability {
  /** The tool calls to users' nodes (shared with the node HTTP routes). */
  readonly caller: NodeToolCaller;
}

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

/**
 * Node tools for runs with `capabilities.nodeTools`: the tools of the user's first
 * `AGENT_MAX_TOOL_NODES` online nodes, as fill tools (they take the room the run's other tools
 * leave under `AGENT_MAX_TOOLS`). A failing node listing (gateway or Redis down) leaves the run
 * without node tools, logged.
 */
export function nodeToolsCapability(
  deps: NodeToolsDeps,
  settings: NodeToolsSettings,
): NodeToolsCapability {
  const made =
    'caller' in deps
      ? deps.caller
      : createNodeToolCaller({
          bus: deps.bus,
          presence: deps.presence,
          defaultTimeoutMs: settings.TOOL_CALL_TIMEOUT_MS,
        });
  const caller = deps.metrics ? instrumentNodeToolCaller(made, deps.metrics) : made;
  const maxNodes = settings.AGENT_MAX_TOOL_NODES;
  return {
    caller,
    // A caller made here is this capability's to close (its subscription to presence changes).
    ...('caller' in deps ? {} : { close: async () => caller.close?.() }),
    source: async (run) => {
      if (!run.request.capabilities.nodeTools) return [];
      let nodes: NodeTools[];
      try {
        nodes = await caller.listTools(run.userId);
      } catch (err) {
        deps.logger.warn(
          { runId: run.runId, sessionId: run.sessionId, err },
          'node tools unavailable for this run',
        );
        return [];
      }
      const { offered, left } = nodesOffered(nodes, maxNodes);
      const taken = run.reservedToolNames ?? new Set<string>();
      return {
        fillTools: nodeToolsToAgentTools(run.userId, offered, caller, taken),
        limits:
          left.length > 0
            ? [
                `the tools of ${left.length} more of your devices were not offered (at most ${maxNodes} devices per run)`,
              ]
            : [],
      };
    },
  };
}

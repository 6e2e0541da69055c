/**
 * The tools of a user's online nodes (desktops, browser extensions) as a capability of runs,
 * outside the agent runtime: listed through the presence registry, called through whichever
 * gateway replica holds the node, bounded per run (docs/agent.md, "Tools of a run").
 */
export {
  DEFAULT_MAX_TOOL_NODES,
  nodesOffered,
  nodeToolsCapability,
  type NodeToolsCapability,
  type NodeToolsDeps,
  type NodeToolsSettings,
} from './capability.js';
export { nodeToolsToAgentTools } from './node-tools.js';
export type { NodeToolCaller } from '@agent-backend/node-rpc';

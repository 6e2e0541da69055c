export {
  NodeCallError,
  type NodeToolCaller,
  type NodeTools,
  type NodeToolCall,
  type NodeCallErrorCode,
} from './node-tool-caller.js';
export {
  createNodeToolCaller,
  listNodeRecords,
  nodeRecordOf,
  toolsOf,
  type BusNodeToolCallerOptions,
  type RoutingNodeToolCaller,
  type PresentNode,
} from './bus-node-tool-caller.js';
export {
  gatewayChannel,
  userWebChannel,
  DISCONNECT_USER_CHANNEL,
  GatewayCommand,
  ToolCallCommand,
  toolCallCommandOf,
  DeliverCommand,
  ReplaceCommand,
  ToolCallReply,
  toolCallReply,
  ToolCallNotHere,
  PRESENCE_CHANGES_CHANNEL,
  PresenceChange,
  GatewayCommandError,
  GATEWAY_ERROR,
} from './gateway-commands.js';
export type { CachedRoute } from './route-cache.js';
export { instrumentNodeToolCaller } from './instrumented-caller.js';
export { carriesUnsampled } from './call-spans.js';

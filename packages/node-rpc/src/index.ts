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
  type PresentNode,
} from './bus-node-tool-caller.js';
export {
  gatewayChannel,
  userWebChannel,
  DISCONNECT_USER_CHANNEL,
  GatewayCommand,
  ToolCallCommand,
  DeliverCommand,
  ReplaceCommand,
  ToolCallReply,
  GatewayCommandError,
  GATEWAY_ERROR,
} from './gateway-commands.js';
export { instrumentNodeToolCaller } from './instrumented-caller.js';

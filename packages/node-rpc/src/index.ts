export {
  NodeCallError,
  type NodeToolCaller,
  type NodeTools,
  type NodeToolCall,
  type NodeCallErrorCode,
} from './node-tool-caller.js';
export {
  createNodeToolCaller,
  toolsOf,
  type BusNodeToolCallerOptions,
} from './bus-node-tool-caller.js';
export {
  gatewayChannel,
  userWebChannel,
  GatewayCommand,
  ToolCallCommand,
  DeliverCommand,
  ReplaceCommand,
  ToolCallReply,
  GatewayCommandError,
  GATEWAY_ERROR,
} from './gateway-commands.js';

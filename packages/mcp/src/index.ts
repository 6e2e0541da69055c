export {
  connectMcp,
  type ConnectOptions,
  type McpPolicy,
  type McpServerConfig,
} from './connect.js';
export { McpConnection, type CallOptions } from './connection.js';
export { McpConnectError, type McpFailureKind } from './errors.js';
export {
  validateMcpServer,
  DEFAULT_VALIDATE_TIMEOUT_MS,
  type ValidateOptions,
} from './validate.js';
export { StdioPolicy } from './stdio-policy.js';
export { parseCommandLine, CommandLineError } from './command-line.js';
export { minimalEnvironment, type SpawnFn } from './stdio-transport.js';
export { displayUrl, scrubSecrets, secretsOf } from './redact.js';

export * from './sandbox.js';
export {
  BubblewrapSandboxProvider,
  DEFAULT_LOCAL_LIMITS,
  LOCAL_OUTPUTS_DIR,
  LOCAL_WORKDIR,
  type BubblewrapOptions,
  type LocalLimits,
} from './local/bwrap-provider.js';
export {
  E2BSandboxProvider,
  E2B_MAX_STREAMED_BYTES,
  E2B_WORKDIR,
  type E2BOptions,
} from './cloud/e2b-provider.js';
export {
  DockerSandboxProvider,
  type DockerOptions,
  type SandboxLogger,
} from './local/docker-provider.js';
export { processLimitMode, type ProcessLimitMode } from './local/process-limit.js';
export { isWithin } from './local/host-path.js';
export { MAX_HELD_DIRS } from './local/no-follow.js';
export {
  sandboxLeaseKey,
  SessionSandboxes,
  type SessionSandboxSettings,
  type SweepFailure,
  type SweepOutcome,
} from './session-sandboxes.js';
export { sandboxTools, type SandboxAccess, type SandboxToolSettings } from './tools.js';
export {
  createSandboxCapability,
  RUN_FILES_DIR,
  type RunFiles,
  resolveWorkingDirectory,
  type SandboxCapability,
  type SandboxCapabilityOptions,
} from './capability.js';
export {
  sandboxCapability,
  type SandboxConfig,
  type SandboxDeps,
} from './configured-capability.js';

/** The agent every kind of run uses, assembled once per role (docs/agent.md, "Assembly"). */
export { createAgent, type Agent, type AgentDeps, type AgentOptions } from './create-agent.js';
export { agentSettings, type AgentServiceSettings } from './settings.js';
export {
  HostedRun,
  isSuspendedData,
  remoteAttachKey,
  type HostedEvent,
  type HostedRunOptions,
} from './hosted-run.js';
export {
  AGENT_RUNS_QUEUE,
  AgentRunJob,
  enqueueRunJob,
  hostRun,
  processAgentRuns,
  scheduleResumes,
  type RunHostSettings,
  type RunJobsDeps,
} from './run-jobs.js';
export { RUN_CANCEL_CHANNEL, RunStopper } from './run-stopper.js';
export { unstoredRun, type JoinableRun } from './unstored-run.js';
export { takeoverState } from './takeover-state.js';
export { startTakeoverSweep } from './takeover-sweep.js';

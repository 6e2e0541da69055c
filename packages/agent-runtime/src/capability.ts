import type { ToolSource } from './tool.js';

/**
 * One capability of runs (memory, skills, code execution, web search, a user's devices, ...) as
 * its package builds it with `xxxCapability(deps, settings)`: the tool source the agent adds to
 * every run (which decides from the run's request what it contributes), and what it holds open.
 */
export interface Capability {
  readonly source: ToolSource;
  /** Closes what the capability holds open (connections); called once, when the agent closes. */
  close?(): Promise<void>;
}

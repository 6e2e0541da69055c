import { AgentRunError } from './errors.js';
import { proposePlanTool, writeTodosTool } from './planning-tools.js';
import { ToolRegistry, type AgentTool, type RunContribution, type RunInfo } from './tool.js';
import { boundRunTools, toolsLimitedNotice } from './tool-bounds.js';
import type { ExecuteRunOptions } from './run-options.js';
import type { AgentEvent } from '@agent-backend/protocol';

/**
 * Built-in tools, then the sources' fill tools (the user's devices'), then the other sources'
 * tools, unique by name; at most `settings.maxTools` in all (see {@link boundRunTools} for what
 * is left out, and the `tools_limited` notice that says so).
 */
export async function buildRegistry(options: ExecuteRunOptions): Promise<Assembled> {
  const { logger, settings } = options;
  const promptSections: string[] = [];
  const events: AgentEvent[] = [];
  const limits: string[] = [];
  const builtIn = [writeTodosTool(), proposePlanTool()];
  const names = new Set(builtIn.map((tool) => tool.name));
  const run: RunInfo = { ...options.run, reservedToolNames: new Set(names) };
  const log = { runId: run.runId, sessionId: run.sessionId };
  // Sources are asked together; their tools are added in the sources' order.
  const contributions: RunContribution[] = [];
  const added = await Promise.allSettled((options.toolSources ?? []).map((source) => source(run)));
  for (const result of added) {
    // A source may refuse the run itself (a local sandbox outside the user's directory).
    if (result.status === 'rejected' && result.reason instanceof AgentRunError) throw result.reason;
    if (result.status === 'rejected') {
      logger.warn(
        { ...log, err: result.reason },
        'a tool source failed; its tools are missing from this run',
      );
      continue;
    }
    contributions.push(isToolList(result.value) ? { tools: result.value } : result.value);
  }
  const unique = (tools: readonly AgentTool[] | undefined, into: AgentTool[]) => {
    for (const tool of tools ?? []) {
      if (names.has(tool.name)) {
        logger.warn({ ...log, tool: tool.name }, 'duplicate tool skipped');
      } else {
        names.add(tool.name);
        into.push(tool);
      }
    }
  };
  // Fill tools name first (a device tool keeps its name over a source tool's), fit last.
  const fillTools: AgentTool[] = [];
  for (const contribution of contributions) unique(contribution.fillTools, fillTools);
  const sourceTools: AgentTool[] = [];
  for (const contribution of contributions) {
    unique(contribution.tools, sourceTools);
    limits.push(...(contribution.limits ?? []));
    promptSections.push(...(contribution.promptSections ?? []));
    events.push(...(contribution.events ?? []));
  }
  const { kept, leftOut } = boundRunTools(
    { builtIn, fill: fillTools, source: sourceTools },
    settings.maxTools,
  );
  const registry = new ToolRegistry();
  for (const tool of kept) registry.add(tool);
  const notice = toolsLimitedNotice({ limits, leftOut, maxTools: settings.maxTools });
  if (notice) {
    logger.warn({ ...log, limits, toolsLeftOut: leftOut }, 'run tools limited');
    events.push(notice);
  }
  return { registry, promptSections, events };
}

/** A run's tools, with the prompt sections and opening events its sources contributed. */
export interface Assembled {
  readonly registry: ToolRegistry;
  readonly promptSections: readonly string[];
  readonly events: readonly AgentEvent[];
}

const isToolList = (value: readonly AgentTool[] | RunContribution): value is readonly AgentTool[] =>
  Array.isArray(value);

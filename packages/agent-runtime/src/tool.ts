import type { AgentEvent, ConversationMode } from '@agent-backend/protocol';
import type { RunRequest } from './run-request.js';
import type { SessionState } from './session-state.js';

/** What a tool gets besides its arguments. */
export interface ToolContext {
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly mode: ConversationMode;
  /** Aborted when the run is: a tool that waits on something must stop waiting. */
  readonly signal: AbortSignal;
  /** The session's agent state (todo list, pending plan); tools may change it. */
  readonly state: SessionState;
  /** Sends an event to the stream (e.g. `todos` after the list changed). */
  emit(event: AgentEvent): void;
}

/** What a tool answers; `content` goes to the model as the tool message and to `tool_result`. */
export interface ToolOutput {
  readonly content: string;
  /**
   * Images the tool returned (a screenshot, an MCP image item), base64. They reach the client
   * in `tool_result.images`; the model reads `content`, which should mention them.
   */
  readonly images?: ReadonlyArray<{ readonly data: string; readonly mimeType: string }>;
  /** The tool failed; `content` says why. @default false */
  readonly isError?: boolean;
  /** Stop the run after this turn (the plan mode's `propose_plan`). @default false */
  readonly endRun?: boolean;
}

/**
 * A tool the model can call. Every source of tools (built-ins, the user's nodes, MCP servers,
 * knowledge bases, and each capability that offers tools) adapts to this one shape and is added to the run's {@link ToolRegistry}.
 */
export interface AgentTool {
  /** OpenAI function name: `^[A-Za-z0-9_-]{1,64}$`, unique in the run. */
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Record<string, unknown>;
  /**
   * Whether calling it changes something outside the conversation (sends, books, clicks,
   * writes files). Write tools are neither offered nor executed in `ask` mode and not executed
   * in `plan` mode.
   */
  readonly writes: boolean;
  /** Modes that offer the tool, when narrower than "every mode its `writes` allows". */
  readonly modes?: readonly ConversationMode[];
  /**
   * Whether calls may run while other calls of the same turn run. `false` (e.g. commands in one
   * session's sandbox, which share a working directory) makes each call of the tool run alone:
   * it waits until no other call of the turn executes, and the others wait for it.
   * @default true
   */
  readonly parallelSafe?: boolean;
  /**
   * Whether a call may run again when the run is taken over after its replica died while the
   * call was in flight (reads and the run's own bookkeeping: todos, knowledge, memory and web
   * search, read-only SaaS calls). Otherwise such a call is reported to the model as
   * interrupted, never run twice silently (node tools, code execution, writes). @default false
   */
  readonly repeatSafe?: boolean;
  execute(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput>;
}

/** What a tool source knows about the run it adds tools to. */
export interface RunInfo {
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
  readonly request: RunRequest;
  readonly signal: AbortSignal;
  /**
   * Aborted when the run should suspend rather than hold its server (see `RunHostHooks`): a
   * hook waiting for an approval then holds the call (`{ action: 'hold' }`). Absent: never.
   */
  readonly suspend?: AbortSignal;
  /**
   * The user's earlier messages of the session, oldest first, without the run's own message
   * (skills matching reads the latest few). From the conversation the run reads once anyway;
   * absent outside a run (a source must then assume none).
   */
  readonly earlierUserTurns?: () => Promise<readonly string[]>;
  /**
   * Names the run's built-in tools take (`write_todos`, `propose_plan`): a source that renames
   * its tools on a clash (the user's devices') avoids them. Absent outside a run.
   */
  readonly reservedToolNames?: ReadonlySet<string>;
}

/** What a capability adds to one run besides tools. */
export interface RunContribution {
  readonly tools?: readonly AgentTool[];
  /**
   * Tools that take only the room the other tools leave under the run's tool bound
   * (`AGENT_MAX_TOOLS`), cut from the end when over: the user's devices' tools, which may be
   * hundreds. Their names come before the other sources' tools (a source tool of the same name
   * is skipped); the `tools_limited` notice counts them as the devices'.
   */
  readonly fillTools?: readonly AgentTool[];
  /**
   * What the source left out by bounds of its own (the devices past `AGENT_MAX_TOOL_NODES`):
   * said first in the run's `tools_limited` notice.
   */
  readonly limits?: readonly string[];
  /** Sections of the system prompt (remembered facts, activated skills, ...), in order. */
  readonly promptSections?: readonly string[];
  /** Events streamed right after `session`, before the answer (e.g. which skills are active). */
  readonly events?: readonly AgentEvent[];
}

/**
 * Adds tools to a run (MCP servers, knowledge bases, and each capability), and optionally
 * system-prompt sections and opening events. A source that fails is logged and skipped; the run
 * goes on with the other sources.
 */
export type ToolSource = (run: RunInfo) => Promise<readonly AgentTool[] | RunContribution>;

/** Valid OpenAI function names. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Raised when a tool is added under a name that is invalid or already taken. */
export class ToolRegistryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolRegistryError';
  }
}

/** The tools of one run, by name. */
export class ToolRegistry {
  private readonly tools = new Map<string, AgentTool>();

  add(tool: AgentTool): void {
    if (!TOOL_NAME.test(tool.name)) {
      throw new ToolRegistryError(`tool name "${tool.name}" is not a valid function name`);
    }
    if (this.tools.has(tool.name)) throw new ToolRegistryError(`tool "${tool.name}" exists`);
    this.tools.set(tool.name, tool);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  get(name: string): AgentTool | undefined {
    return this.tools.get(name);
  }

  all(): AgentTool[] {
    return [...this.tools.values()];
  }

  /** The tools the model is offered in `mode` (see {@link availability}). */
  offered(mode: ConversationMode): AgentTool[] {
    return this.all().filter((tool) => availability(tool, mode) === 'available');
  }
}

/**
 * Whether a tool may run in a mode (spec 3.3):
 * - `agent`: every tool that lists the mode (all by default).
 * - `ask`: read-only question answering: write tools are neither offered nor executed.
 * - `plan`: read tools help research the plan; write tools are described to the model in the
 *   system prompt (so the plan can use them) but not offered and never executed.
 */
export function availability(
  tool: AgentTool,
  mode: ConversationMode,
): 'available' | 'not_in_mode' | 'writes' {
  if (tool.modes && !tool.modes.includes(mode)) return 'not_in_mode';
  if (tool.writes && mode !== 'agent') return 'writes';
  return 'available';
}

import type { AgentEvent } from '@agent-backend/protocol';
import type { HeldApproval } from './run-state.js';
import type { Release } from './semaphore.js';
import { boundResultImages } from './tool-bounds.js';
import type { AssembledToolCall } from './tool-call-accumulator.js';
import {
  availability,
  type AgentTool,
  type ToolContext,
  type ToolOutput,
  type ToolRegistry,
} from './tool.js';
import { traced } from './traced.js';

/** A tool call about to run, as the `beforeToolCall` hook sees it. */
export interface PendingToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly tool: AgentTool;
  readonly context: ToolContext;
}

/**
 * What the hook decided: run (possibly with edited arguments), skip with a message for the
 * model, or hold: the call waits for an approval (`requestId`) while the run suspends.
 */
export type ToolCallDecision =
  | { action: 'run'; args: Record<string, unknown> }
  | { action: 'skip'; message: string }
  | { action: 'hold'; approval: HeldApproval };

/**
 * The one point before any tool executes (human-in-the-loop approval plugs in here). Called
 * only for calls that passed the mode check and argument parsing; a skip becomes the call's
 * tool message (marked as an error) and the loop goes on. The calls of one turn may be asked
 * about concurrently (see `runToolCalls`); a hook that throws refuses the call (it does not run).
 */
export type BeforeToolCall = (call: PendingToolCall) => Promise<ToolCallDecision>;

/**
 * Waits for the call's turn to execute, after the hook let it run: `null` when the run was
 * aborted meanwhile (the call is then cancelled without running).
 */
export type ToolSlot = (tool: AgentTool) => Promise<Release | null>;

export interface ExecuteOptions {
  readonly registry: ToolRegistry;
  readonly context: ToolContext;
  readonly beforeToolCall?: BeforeToolCall;
  /** Absent: the tool executes as soon as the hook lets it. */
  readonly slot?: ToolSlot;
  /**
   * Resolves once the events sent so far are durable (the run log): awaited after `tool_call`
   * and before a tool that is not `repeatSafe` executes, so a run taken over after a crash knows
   * every such call that may have started. A repeat-safe call does not wait: a takeover that
   * does not know of it asks the model again, and one that does runs it again. @default none
   */
  readonly durable?: () => Promise<void>;
  emit(event: AgentEvent): void;
}

function parseArgs(raw: string): Record<string, unknown> | null {
  if (raw.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** A call's outcome: its output, or the approval it is held for while the run suspends. */
export type CallOutcome = ToolOutput & { readonly heldFor?: HeldApproval };

/** The tool message of a call the run's abort stopped (or kept from starting). */
export const CANCELLED_CONTENT = 'Cancelled: the run was stopped.';
const CANCELLED: ToolOutput = { content: CANCELLED_CONTENT, isError: true };

/**
 * Executes `tool` with `args` (a call cleared to run), the run's abort stopping the wait: the
 * same path a call takes in {@link executeToolCall} once the hook let it run.
 */
export async function runTool(
  tool: AgentTool,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<ToolOutput> {
  if (context.signal.aborted) return CANCELLED;
  try {
    const result = await Promise.race([tool.execute(args, context), whenAborted(context.signal)]);
    return result ?? CANCELLED;
  } catch (error) {
    const message = error instanceof Error ? error.message : 'unknown error';
    return { content: `The tool failed: ${message}`, isError: true };
  }
}

/** Resolves with `undefined` when the signal aborts, so a tool that ignores it cannot hang the run. */
function whenAborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener('abort', () => resolve(undefined), { once: true });
  });
}

/**
 * Runs one tool call and streams `tool_call` then `tool_result`. Never throws for the tool's
 * sake: unknown tools, tools not available in the mode, arguments that are not a JSON object,
 * a skip by the hook, and exceptions of the tool all become an error result the model can read.
 */
export function executeToolCall(
  call: AssembledToolCall,
  options: ExecuteOptions,
): Promise<CallOutcome> {
  return traced(
    `execute_tool ${call.name}`,
    { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': call.name },
    toolCall,
    call,
    options,
  );
}

async function toolCall(call: AssembledToolCall, options: ExecuteOptions): Promise<CallOutcome> {
  const { context, emit } = options;
  const args = parseArgs(call.arguments);
  emit({ type: 'tool_call', tool_name: call.name, tool_args: args ?? {}, tool_call_id: call.id });
  if (!options.registry.get(call.name)?.repeatSafe) await options.durable?.();
  const output = boundResultImages(await outcome(call, args, options));
  // A held call has no result yet: it gets one when the run resumes.
  if (output.heldFor !== undefined) return output;
  emit({
    type: 'tool_result',
    tool_name: call.name,
    result: output.content,
    tool_call_id: call.id,
    ...(output.isError ? { is_error: true } : {}),
    ...(output.images?.length ? { images: output.images.map((i) => ({ ...i })) } : {}),
  });
  return output;

  async function outcome(
    call: AssembledToolCall,
    args: Record<string, unknown> | null,
    { registry, beforeToolCall, slot }: ExecuteOptions,
  ): Promise<CallOutcome> {
    const tool = registry.get(call.name);
    if (!tool) return { content: `Unknown tool "${call.name}".`, isError: true };
    const allowed = availability(tool, context.mode);
    if (allowed === 'writes') {
      return {
        content: `${call.name} changes things outside the conversation and is not available in ${context.mode} mode.`,
        isError: true,
      };
    }
    if (allowed === 'not_in_mode') {
      return { content: `${call.name} is not available in ${context.mode} mode.`, isError: true };
    }
    if (!args) return { content: 'The arguments are not a JSON object.', isError: true };
    let runArgs = args;
    if (beforeToolCall) {
      let decision: ToolCallDecision;
      try {
        decision = await beforeToolCall({ id: call.id, name: call.name, args, tool, context });
      } catch (error) {
        const message = error instanceof Error ? error.message : 'unknown error';
        return { content: `The call could not be cleared to run: ${message}`, isError: true };
      }
      if (decision.action === 'skip') return { content: decision.message, isError: true };
      if (decision.action === 'hold') return { content: '', heldFor: decision.approval };
      runArgs = decision.args;
    }
    const release = slot ? await slot(tool) : undefined;
    if (release === null || context.signal.aborted) {
      release?.();
      return CANCELLED;
    }
    try {
      return await runTool(tool, runArgs, context);
    } finally {
      release?.();
    }
  }
}

import type { AgentEvent } from '@agent-backend/protocol';
import type { AssembledToolCall } from './tool-call-accumulator.js';
import {
  availability,
  type AgentTool,
  type ToolContext,
  type ToolOutput,
  type ToolRegistry,
} from './tool.js';

/** A tool call about to run, as the `beforeToolCall` hook sees it. */
export interface PendingToolCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly tool: AgentTool;
  readonly context: ToolContext;
}

/** What the hook decided: run (possibly with edited arguments) or skip with a message for the model. */
export type ToolCallDecision =
  { action: 'run'; args: Record<string, unknown> } | { action: 'skip'; message: string };

/**
 * The one point before any tool executes (human-in-the-loop approval plugs in here). Called
 * only for calls that passed the mode check and argument parsing; a skip becomes the call's
 * tool message (marked as an error) and the loop goes on.
 */
export type BeforeToolCall = (call: PendingToolCall) => Promise<ToolCallDecision>;

interface ExecuteOptions {
  readonly registry: ToolRegistry;
  readonly context: ToolContext;
  readonly beforeToolCall?: BeforeToolCall;
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
export async function executeToolCall(
  call: AssembledToolCall,
  options: ExecuteOptions,
): Promise<ToolOutput> {
  const { context, emit } = options;
  const args = parseArgs(call.arguments);
  emit({ type: 'tool_call', tool_name: call.name, tool_args: args ?? {}, tool_call_id: call.id });
  const output = await outcome(call, args, options);
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
    { registry, beforeToolCall }: ExecuteOptions,
  ): Promise<ToolOutput> {
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
      const decision = await beforeToolCall({ id: call.id, name: call.name, args, tool, context });
      if (decision.action === 'skip') return { content: decision.message, isError: true };
      runArgs = decision.args;
    }
    try {
      const result = await Promise.race([
        tool.execute(runArgs, context),
        whenAborted(context.signal),
      ]);
      return result ?? { content: 'Cancelled: the run was stopped.', isError: true };
    } catch (error) {
      const message = error instanceof Error ? error.message : 'unknown error';
      return { content: `The tool failed: ${message}`, isError: true };
    }
  }
}

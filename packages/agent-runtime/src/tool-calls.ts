import type { ToolMessage } from './chat-message.js';
import type { HeldApproval } from './run-state.js';
import { truncate } from './context-limits.js';
import { Semaphore } from './semaphore.js';
import type { AssembledToolCall } from './tool-call-accumulator.js';
import {
  CANCELLED_CONTENT,
  executeToolCall,
  type ExecuteOptions,
  type ToolSlot,
} from './tool-execution.js';

/** Calls of one turn executing at once when the settings say nothing. @default 8 */
export const DEFAULT_MAX_PARALLEL_TOOLS = 8;

export interface ToolCallsOptions extends Omit<ExecuteOptions, 'slot'> {
  /**
   * Calls of the turn executing at the same time; `1` runs them one after the other in the
   * model's order, each asked about (HITL) only after the previous one finished.
   */
  readonly maxParallel: number;
  /** Longest tool result sent to the model; longer ones are truncated. */
  readonly maxResultChars: number;
}

/**
 * The turn's tool messages, in the model's order of calls, and whether a tool ended the run.
 * When calls are held for approvals while the run suspends, `held` maps their ids to the
 * approvals' request ids and `messages` has only the other calls' messages.
 */
export interface ToolCallsOutcome {
  readonly messages: ToolMessage[];
  readonly endRun: boolean;
  readonly held?: Readonly<Record<string, HeldApproval>>;
}

/**
 * Runs the tool calls of one model turn and answers each with exactly one tool message, in the
 * model's order of calls whatever the order they finished in (OpenAI-compatible providers
 * expect the tool messages right after the assistant message; the order keeps stored
 * conversations identical across runs).
 *
 * With `maxParallel` above 1 every call starts at once: `tool_call` goes out for each in the
 * model's order, the `beforeToolCall` hook (HITL) is asked about all of them together, and each
 * call executes as soon as the hook lets it and one of the `maxParallel` slots is free, its
 * `tool_result` streamed when it completes. A tool that is not `parallelSafe` takes every slot,
 * so it runs alone. An abort cancels calls waiting for the hook or a slot and stops the running
 * ones (see `executeToolCall`); each still gets its tool message.
 */
export async function runToolCalls(
  calls: readonly AssembledToolCall[],
  options: ToolCallsOptions,
): Promise<ToolCallsOutcome> {
  const outputs =
    options.maxParallel > 1 ? await concurrently(calls, options) : await oneByOne(calls, options);
  const held: Record<string, HeldApproval> = {};
  const messages: ToolMessage[] = [];
  for (const [i, call] of calls.entries()) {
    const output = outputs[i]!;
    if (output.heldFor !== undefined) held[call.id] = output.heldFor;
    else {
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: truncate(output.content, options.maxResultChars),
      });
    }
  }
  return {
    messages,
    endRun: outputs.some((output) => output.endRun === true),
    ...(Object.keys(held).length > 0 ? { held } : {}),
  };
}

type Output = Awaited<ReturnType<typeof executeToolCall>>;
const NOT_STARTED: Output = { content: CANCELLED_CONTENT, isError: true };

/** The loop as it was before calls ran in parallel (kept for `maxParallel: 1` and as the benchmark's baseline). */
async function oneByOne(
  calls: readonly AssembledToolCall[],
  options: ToolCallsOptions,
): Promise<Output[]> {
  const outputs: Output[] = [];
  for (const call of calls) {
    if (options.context.signal.aborted) {
      outputs.push(NOT_STARTED);
      continue;
    }
    outputs.push(await executeToolCall(call, options));
  }
  return outputs;
}

async function concurrently(
  calls: readonly AssembledToolCall[],
  options: ToolCallsOptions,
): Promise<Output[]> {
  const slots = new Semaphore(options.maxParallel);
  const slot: ToolSlot = (tool) =>
    slots.acquire(options.context.signal, tool.parallelSafe === false ? slots.capacity : 1);
  const settled = await Promise.allSettled(
    calls.map((call) =>
      options.context.signal.aborted
        ? Promise.resolve(NOT_STARTED)
        : executeToolCall(call, { ...options, slot }),
    ),
  );
  // executeToolCall turns every failure of a tool into its output; a rejection is a bug (an
  // emit that threw), thrown only once no call of the turn is still running.
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<Output>).value);
}

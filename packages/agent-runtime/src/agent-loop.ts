import type OpenAI from 'openai';
import type { Logger } from '@agent-backend/logger';
import type { AgentMetrics } from '@agent-backend/metrics';
import type { AgentEvent } from '@agent-backend/protocol';
import type { AssistantMessage, ChatMessage } from './chat-message.js';
import { AgentRunError, RUN_ERROR_CODES, RunSuspendedError } from './errors.js';
import { streamModelTurn, TurnAbortedError } from './model-turn.js';
import { DEFAULT_MAX_PARALLEL_TOOLS, runToolCalls } from './tool-calls.js';
import type { PendingTurn } from './run-state.js';
import type { BeforeToolCall } from './tool-execution.js';
import type { ToolContext, ToolRegistry } from './tool.js';

/** What one run of the loop needs; `runAgentLoop` owns nothing else. */
export interface AgentLoopOptions {
  readonly client: OpenAI;
  readonly model: string;
  readonly temperature: number;
  /** Only to scrub it out of provider error messages. */
  readonly apiKey: string;
  /** The whole context of the first request: system prompt, history, the new user message. */
  readonly messages: readonly ChatMessage[];
  readonly registry: ToolRegistry;
  readonly context: ToolContext;
  /** Model requests allowed in this run. */
  readonly maxSteps: number;
  /** Model requests the run made before (a resumed run continues its count). @default 0 */
  readonly stepsTaken?: number;
  readonly idleTimeoutMs: number;
  /** Longest tool result sent to the model; longer ones are truncated. */
  readonly maxToolResultChars: number;
  /**
   * Tool calls of one turn executing at once (see `runToolCalls`); `1` runs them one after
   * the other. @default 8
   */
  readonly maxParallelTools?: number;
  readonly beforeToolCall?: BeforeToolCall;
  /** Time to first token and tokens of each model request. */
  readonly metrics?: AgentMetrics;
  /** The user's daily token budget; absent: not limited. */
  readonly budget?: TurnBudget;
  emit(event: AgentEvent): void;
  /**
   * Stores one completed turn: the assistant message and, when it called tools, one tool
   * message per call. The next model request starts while a tool step is stored, but none of
   * its events goes out before (nor its tools run), so the stored conversation is always one a
   * model accepts and a takeover finds at most one step unstored. `step` is the model request
   * the messages complete (from 1).
   */
  commit(messages: ChatMessage[], step: number): Promise<void>;
  /**
   * Writes still under way when the loop starts (the run's rows, see `ExecuteRunOptions.written`):
   * the first model request goes out at once and its text is streamed at once; its tools run,
   * and its answer is stored, once they are (the run's `done` waits for them too).
   */
  readonly after?: Promise<void>;
  /** @see ExecuteOptions.durable */
  durable?(): Promise<void>;
  /**
   * Records a turn (its assistant message with every call) before its first call executes,
   * when its calls run one after the other (`maxParallelTools` 1, more than one call): their
   * `tool_call` events then go out one at a time, so a run taken over after a crash would not
   * otherwise know the calls that had not started. It only serves such a takeover, so a failure
   * (the store unreachable) is logged and the run goes on. @default none
   */
  recordTurn?(assistant: AssistantMessage, step: number): Promise<void>;
  /** Where what the run survives is reported (a turn record not written). @default none */
  readonly logger?: Logger;
  /**
   * Stores the turn whose calls wait for approvals while the run suspends (see `RunState`);
   * the loop then rejects with {@link RunSuspendedError}. Absent: no hook holds calls.
   */
  suspend?(turn: PendingTurn, step: number): Promise<void>;
}

/** The user's daily token budget as a run sees it (docs/limits.md). */
export interface TurnBudget {
  /** Before the run's first model request: false when the budget is already used up. */
  allows(): Promise<boolean>;
  /** After a model request that called tools, with the tokens it reported: false when it is now used up. */
  spend(tokens: number): Promise<boolean>;
  /**
   * After the run's final answer (a model request without tool calls), with its tokens: where
   * the budget stands after it changes nothing (the run ends anyway), so they are kept for
   * {@link settle} and go out with the run's last writes instead of a write of their own.
   */
  spendAtEnd(tokens: number): void;
  /** Adds what `spendAtEnd` kept (nothing kept: no call); never rejects. */
  settle(): Promise<void>;
}

/**
 * The agent loop: ask the model (streaming its text), run the tools it called (concurrently, up
 * to `maxParallelTools` at a time, see `runToolCalls`), give it the results in the order it
 * called them, and repeat until it answers without calling a tool, a tool ends the run
 * (`propose_plan`), or `maxSteps` model requests were made. With a `budget`, a run whose budget
 * is used up makes no model request, and a model request that uses it up ends the run with
 * `budget_exceeded` before the tools it called run (a final answer that crosses it still ends
 * the run normally: nothing more would be spent).
 *
 * Every tool call gets exactly one tool message before the next model request (refused,
 * skipped by the `beforeToolCall` hook, failed, or cancelled by an abort included). Resolves
 * when the run finished; rejects with an {@link AgentRunError} or, when the run's signal
 * aborted, with a {@link TurnAbortedError} (after storing what was completed).
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<void> {
  const { context } = options;
  const messages: ChatMessage[] = [...options.messages];
  const { budget } = options;
  // A run continued from its stored state was admitted when it started.
  if (budget && !options.stepsTaken && !(await budget.allows())) {
    throw new AgentRunError('budget_exceeded');
  }
  // The previous tool step's rows, written while the next model request starts (see `after`).
  let storing: Promise<void> | undefined;
  // The run's rows: the first turn's end waits for them, its text does not.
  let rows = options.after;
  for (let step = (options.stepsTaken ?? 0) + 1; step <= options.maxSteps; step++) {
    let text = '';
    let turn;
    const after = storing;
    const endsAfter = rows;
    storing = undefined;
    rows = undefined;
    try {
      turn = await streamModelTurn({
        client: options.client,
        model: options.model,
        temperature: options.temperature,
        messages,
        tools: options.registry.offered(context.mode),
        signal: context.signal,
        idleTimeoutMs: options.idleTimeoutMs,
        apiKey: options.apiKey,
        ...(options.metrics ? { metrics: options.metrics } : {}),
        ...(after ? { after } : {}),
        ...(endsAfter ? { endsAfter } : {}),
        onText: (piece) => {
          text += piece;
          options.emit({ type: 'message_chunk', content: piece });
        },
      });
    } catch (error) {
      // The previous step settled first (the turn's text waited for it), then the part of the
      // answer the user already saw.
      await after?.catch(() => undefined);
      await endsAfter?.catch(() => undefined);
      if (text) await options.commit([{ role: 'assistant', content: text }], step);
      throw error;
    }
    const assistant: AssistantMessage = { role: 'assistant', content: turn.content || null };
    if (turn.toolCalls.length === 0) {
      // Counted with the run's last writes (see TurnBudget.spendAtEnd), before `done`.
      budget?.spendAtEnd(turn.tokens);
      if (!turn.content && turn.finishReason === null) {
        throw new AgentRunError(
          'llm_bad_response',
          `${RUN_ERROR_CODES.llm_bad_response} (no answer and no tool call)`,
        );
      }
      await options.commit([{ ...assistant, content: turn.content }], step);
      return;
    }
    const within = budget ? await budget.spend(turn.tokens) : true;
    if (!within) {
      // Its tool calls are not run: the stored turn keeps only the text (a valid conversation).
      if (turn.content) await options.commit([{ role: 'assistant', content: turn.content }], step);
      throw new AgentRunError('budget_exceeded');
    }
    assistant.tool_calls = turn.toolCalls.map((call) => ({
      id: call.id,
      type: 'function' as const,
      function: { name: call.name, arguments: call.arguments },
    }));
    const maxParallel = options.maxParallelTools ?? DEFAULT_MAX_PARALLEL_TOOLS;
    if (maxParallel === 1 && turn.toolCalls.length > 1 && options.recordTurn) {
      await options
        .recordTurn(assistant, step)
        .catch((err: unknown) =>
          options.logger?.warn(
            { err, runId: context.runId, step },
            'turn record not written; a takeover of this run would not know its calls not yet started',
          ),
        );
    }
    const {
      messages: results,
      endRun,
      held,
    } = await runToolCalls(turn.toolCalls, {
      registry: options.registry,
      context,
      emit: options.emit,
      ...(options.durable ? { durable: options.durable } : {}),
      ...(options.beforeToolCall ? { beforeToolCall: options.beforeToolCall } : {}),
      maxParallel,
      maxResultChars: options.maxToolResultChars,
    });
    if (held) {
      const settled = Object.fromEntries(
        results.map((m) => [m.tool_call_id, { content: m.content }]),
      );
      if (!options.suspend)
        throw new AgentRunError('internal_error', 'a call was held with no way to suspend');
      await options.suspend({ assistant, settled, approvals: { ...held } }, step);
      throw new RunSuspendedError();
    }
    // Stored while the next model request starts; that turn's first text waits for it.
    const stored = options.commit([assistant, ...results], step);
    stored.catch(() => undefined);
    if (context.signal.aborted || endRun) await stored;
    if (context.signal.aborted) throw new TurnAbortedError();
    if (endRun) return;
    storing = stored;
    messages.push(assistant, ...results);
  }
  await storing;
  throw new AgentRunError(
    'max_steps_exceeded',
    `${RUN_ERROR_CODES.max_steps_exceeded} (${options.maxSteps} model requests)`,
  );
}

import { runAgentLoop } from './agent-loop.js';
import type { AssistantMessage, ChatMessage, ToolMessage } from './chat-message.js';
import { truncate } from './context-limits.js';
import { contextSection, fitHistory } from './context.js';
import { handingOver, RunSuspendedError } from './errors.js';
import { createLlmClient } from './llm-client.js';
import type { RunOptions } from './run-options.js';
import type { HeldApproval, PendingTurn } from './run-state.js';
import type { SessionState } from './session-state.js';
import { systemPrompt } from './system-prompt.js';
import { availability, type ToolContext, type ToolOutput, type ToolRegistry } from './tool.js';
import { runToolCalls } from './tool-calls.js';
import { runTool, type BeforeToolCall, type ToolCallDecision } from './tool-execution.js';

/** What the model part of a run starts from. */
export interface Prepared {
  readonly registry: ToolRegistry;
  readonly promptSections: readonly string[];
  readonly state: SessionState;
  readonly history: readonly ChatMessage[];
  /** The run's new user message; absent when the run continues (it is in `history`). */
  readonly user?: ChatMessage;
  readonly acceptedPlan: { summary: string; steps: string[] } | undefined;
  readonly userStored: Promise<void>;
  /** Model requests the run made before (a run that continues). */
  readonly stepsTaken: number;
  /** The turn a continuing run left unfinished (suspended, or in flight when taken over). */
  readonly pending?: PendingTurn;
  /** The previous holder died mid-answer (see `RunState.answerCut`). */
  readonly answerCut?: boolean;
}

/** The `notice` code telling a client that the answer it was streamed starts again. */
export const ANSWER_RESTARTED_NOTICE = 'answer_restarted';

/** The tool message of a call in flight when its run's replica died, when it may not repeat. */
export const INTERRUPTED_CONTENT =
  'Interrupted: the server running this call stopped before it answered. It may or may not ' +
  'have taken effect and was not run again; check before calling it again.';

/** The model part of the run: prompt, client, loop (after settling a pending turn). */
export async function answer(options: RunOptions, prepared: Prepared): Promise<void> {
  const { run, sessions, settings, emit } = options;
  const { request } = run;
  const { registry, promptSections, state, user, acceptedPlan, userStored } = prepared;
  const limits = settings.limits;
  const system = systemPrompt({
    mode: request.mode,
    state,
    laterTools:
      request.mode === 'plan'
        ? registry.all().filter((tool) => availability(tool, 'plan') === 'writes')
        : [],
    context: contextSection(request.resourceFiles, request.capabilities.sandbox.files, limits),
    sections: promptSections,
    ...(acceptedPlan ? { acceptedPlan } : {}),
  });
  const context: ToolContext = {
    userId: run.userId,
    sessionId: run.sessionId,
    runId: run.runId,
    mode: request.mode,
    signal: run.signal,
    state,
    emit,
  };
  // The step's tokens and last event are taken when its save starts: the next model request
  // runs while the save waits for the user message, and its tokens and events are not this
  // step's (a takeover from this saved state would count them twice).
  const progressNow = () => ({
    lastSeq: options.progress.lastSeq(),
    usage: { ...options.progress.usage },
  });
  const commit = async (messages: ChatMessage[], step: number) => {
    const progress = progressNow();
    await userStored;
    // Handed over mid-step: the next holder settles the step from the run log.
    if (handingOver(run.signal)) return;
    await sessions.commitStep(run, messages, state, { step, ...progress });
  };
  const suspend = async (turn: PendingTurn, step: number) => {
    const { lastSeq, usage } = progressNow();
    await userStored;
    options.progress.suspended = turn;
    // The `suspended` event that follows is `lastSeq + 1`: the resume goes on after it.
    await sessions.suspendRun(run, state, {
      step,
      lastSeq: lastSeq + 1,
      usage,
      pendingTurn: turn,
    });
  };
  let history = prepared.history;
  const stepsTaken = prepared.stepsTaken;
  const beforeToolCall = options.beforeToolCall?.(run);
  if (prepared.pending) {
    const settled = await settlePendingTurn(prepared.pending, options, registry, context, {
      ...(beforeToolCall ? { beforeToolCall } : {}),
    });
    if (settled.held) {
      await suspend(settled.held, stepsTaken);
      throw new RunSuspendedError();
    }
    await commit(settled.messages, stepsTaken);
    if (settled.endRun || run.signal.aborted) return;
    history = [...history, ...settled.messages];
  }
  if (prepared.answerCut) {
    emit({
      type: 'notice',
      code: ANSWER_RESTARTED_NOTICE,
      message:
        'The server streaming the answer stopped mid-answer; the answer starts again. The ' +
        'message_chunk events right before this notice are replaced by the ones that follow.',
    });
  }
  const client = await createLlmClient(request.model, {
    timeoutMs: settings.llmTimeoutMs,
    maxRetries: settings.llmMaxRetries,
    // The operator's own model (`DEFAULT_LLM_*`) is configuration, not user input.
    ...(options.modelUrlGuard && request.model.chosenBy === 'request'
      ? { guard: options.modelUrlGuard }
      : {}),
  });
  const { budget } = options;
  await runAgentLoop({
    client,
    model: request.model.name,
    temperature: request.model.temperature,
    apiKey: request.model.apiKey,
    messages: [
      { role: 'system', content: system },
      ...fitHistory(history, limits.historyChars),
      ...(user ? [user] : []),
    ],
    registry,
    context,
    maxSteps: settings.maxSteps,
    stepsTaken,
    idleTimeoutMs: settings.llmIdleTimeoutMs,
    maxToolResultChars: limits.toolResultChars,
    maxParallelTools: settings.maxParallelTools,
    ...(beforeToolCall ? { beforeToolCall } : {}),
    ...(budget ? { budget } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    emit,
    ...(options.written ? { after: options.written } : {}),
    ...(options.durable ? { durable: options.durable } : {}),
    ...(options.recordTurn ? { recordTurn: options.recordTurn } : {}),
    logger: options.logger,
    commit,
    suspend,
  });
}

/** A settled pending turn: its messages to store, or the turn again when calls are still held. */
interface SettledTurn {
  readonly messages: ChatMessage[];
  readonly held?: PendingTurn;
  readonly endRun: boolean;
}

/**
 * Finishes the turn a continuing run left: calls that completed keep their result; calls held
 * for approval get their outcome (run, refused, or held again, see `resumeApproval`); calls in
 * flight when the run's replica died run again when their tool is `repeatSafe`, and are
 * otherwise answered {@link INTERRUPTED_CONTENT}: never run twice silently. Calls that had not
 * started then run as in any turn (`tool_call`, the approval hook, the tool), in the model's
 * order. A turn without calls is stored as it is; an answer cut off mid-stream is not stored
 * at all (the run is marked `answerCut`, and the model is asked again after a notice).
 */
async function settlePendingTurn(
  pending: PendingTurn,
  options: RunOptions,
  registry: ToolRegistry,
  context: ToolContext,
  hooks: { readonly beforeToolCall?: BeforeToolCall },
): Promise<SettledTurn> {
  const assistant = pending.assistant as AssistantMessage;
  const calls = assistant.tool_calls ?? [];
  const unstarted = new Set(pending.unstarted ?? []);
  const resumeApproval = options.resumeApproval?.(options.run);
  const held: Record<string, HeldApproval> = {};
  const settled: Record<string, { content: string; isError?: boolean }> = { ...pending.settled };
  const outputs = await Promise.all(
    calls.map(async (call): Promise<ToolOutput | null> => {
      const done = pending.settled[call.id];
      if (done || unstarted.has(call.id)) return null;
      const tool = registry.get(call.function.name);
      const args = parseArgs(call.function.arguments);
      const approval = pending.approvals[call.id];
      let output: ToolOutput;
      if (approval) {
        let decision: ToolCallDecision = {
          action: 'skip',
          message: 'The call needed approval, which is unavailable now; it did not run.',
        };
        if (tool && resumeApproval) {
          decision = await resumeApproval({
            id: call.id,
            name: call.function.name,
            args,
            tool,
            context,
            requestId: approval.request_id,
            expiresAt: approval.expires_at,
          }).catch(() => decision);
        }
        if (decision.action === 'hold') {
          held[call.id] = decision.approval;
          return null;
        }
        output =
          decision.action === 'skip' || !tool
            ? {
                content: decision.action === 'skip' ? decision.message : 'Unknown tool.',
                isError: true,
              }
            : await runTool(tool, decision.args, context);
      } else if (tool?.repeatSafe) {
        output = await runTool(tool, args, context);
      } else {
        output = { content: INTERRUPTED_CONTENT, isError: true };
      }
      settled[call.id] = output.isError
        ? { content: output.content, isError: true }
        : { content: output.content };
      context.emit({
        type: 'tool_result',
        tool_name: call.function.name,
        result: output.content,
        tool_call_id: call.id,
        ...(output.isError ? { is_error: true } : {}),
      });
      return output;
    }),
  );
  const fresh = calls.filter((call) => unstarted.has(call.id) && !pending.settled[call.id]);
  if (fresh.length > 0) {
    const ran = await runToolCalls(
      fresh.map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      })),
      {
        registry,
        context,
        emit: context.emit,
        ...(options.durable ? { durable: options.durable } : {}),
        ...(hooks.beforeToolCall ? { beforeToolCall: hooks.beforeToolCall } : {}),
        maxParallel: options.settings.maxParallelTools,
        maxResultChars: options.settings.limits.toolResultChars,
      },
    );
    for (const message of ran.messages)
      settled[message.tool_call_id] = { content: message.content };
    Object.assign(held, ran.held ?? {});
    if (ran.endRun) outputs.push({ content: '', endRun: true });
  }
  if (Object.keys(held).length > 0)
    return { messages: [], held: { assistant, settled, approvals: held }, endRun: false };
  const limit = options.settings.limits.toolResultChars;
  const tools: ToolMessage[] = calls.map((call) => ({
    role: 'tool',
    tool_call_id: call.id,
    content: truncate(settled[call.id]?.content ?? INTERRUPTED_CONTENT, limit),
  }));
  return {
    messages: [assistant, ...tools],
    endRun: outputs.some((output) => output?.endRun === true),
  };
}

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw || '{}');
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The approvals a suspended turn waits for, as the `suspended` event lists them. */
export function heldApprovals(turn: PendingTurn) {
  const names = new Map(
    ((turn.assistant as AssistantMessage).tool_calls ?? []).map((c) => [c.id, c.function.name]),
  );
  return Object.entries(turn.approvals).map(([toolCallId, approval]) => ({
    request_id: approval.request_id,
    tool_call_id: toolCallId,
    tool_name: names.get(toolCallId) ?? '',
    expires_at: approval.expires_at,
  }));
}

/** The text of a conversation's user messages, oldest first. */
export const userTurns = (messages: ReadonlyArray<{ role: string; content: unknown }>): string[] =>
  messages.flatMap((m) => (m.role === 'user' && typeof m.content === 'string' ? [m.content] : []));

import type { AgentMetrics } from '@agent-backend/metrics';
import { isDependencyUnavailable, type AgentEvent } from '@agent-backend/protocol';
import type { ChatMessage } from './chat-message.js';
import { userMessage } from './context.js';
import { AgentRunError, handingOver, RunSuspendedError } from './errors.js';
import { TurnAbortedError } from './model-turn.js';
import { answer, heldApprovals, userTurns } from './run-answer.js';
import type { ExecuteRunOptions, RunOptions, RunProgress, RunResult } from './run-options.js';
import type { PendingTurn } from './run-state.js';
import { buildRegistry } from './run-tools.js';
import type { SessionState } from './session-state.js';
import type { RunInfo } from './tool.js';
import { traced } from './traced.js';

export type { RunEngines, RunResult } from './run-options.js';

/** One run, from the `session` event to `done` or `error`. Never rejects. */
export function executeRun(options: ExecuteRunOptions): Promise<RunResult> {
  const { run } = options;
  return traced(
    'agent run',
    {
      'agent_backend.run.id': run.runId,
      'agent_backend.session.id': run.sessionId,
      'agent_backend.run.mode': run.request.mode,
      'gen_ai.request.model': run.request.model.name,
    },
    executeRunInSpan,
    options,
  );
}

async function executeRunInSpan(given: ExecuteRunOptions): Promise<RunResult> {
  const { run, sessions, logger } = given;
  const { request, signal } = run;
  const log = { runId: run.runId, sessionId: run.sessionId, userId: run.userId };
  // Approval outcomes are stored beside the conversation (its tool messages do not say them),
  // written before the run is recorded as ended.
  const approvals: Promise<void>[] = [];
  // Events sent so far: the `seq` of the last one (stored with each step, see RunState).
  let lastSeq = given.resume?.lastSeq ?? 0;
  // A lease taken while the run starts: no event goes out before it is held (a client that got
  // one joins the run on any replica through the lease and the run log, before its rows are
  // stored); the events meanwhile wait here, in order. The rows themselves are not waited for:
  // `done` is (see below), and a failed write ends the run with `error`.
  let waiting: AgentEvent[] | undefined;
  if (given.leased) {
    const queue: AgentEvent[] = (waiting = []);
    const flush = () => {
      waiting = undefined;
      for (const event of queue) given.emit(event);
    };
    given.leased.then(flush, flush);
  }
  const emit = (event: AgentEvent): void => {
    // Handed over: the next holder continues the stream after the last logged event.
    if (handingOver(signal)) return;
    lastSeq++;
    if (event.type === 'approval_result') {
      approvals.push(
        sessions
          .recordApproval(run, event)
          .catch((err: unknown) => logger.warn({ ...log, err }, 'could not record an approval')),
      );
    }
    if (waiting) waiting.push(event);
    else given.emit(event);
  };
  // The tokens each model request reports, summed for the run (stored with it, sent in `done`).
  const usage = { ...(given.resume?.usage ?? { prompt_tokens: 0, completion_tokens: 0 }) };
  const metrics = given.metrics;
  const countingMetrics: AgentMetrics = {
    runStarted: (mode) => metrics?.runStarted(mode) ?? (() => undefined),
    streamsOpen: metrics?.streamsOpen ?? { inc: () => undefined, dec: () => undefined },
    firstToken: (seconds) => metrics?.firstToken(seconds),
    tokens: (model, prompt, completion) => {
      usage.prompt_tokens += prompt;
      usage.completion_tokens += completion;
      metrics?.tokens(model, prompt, completion);
    },
  };
  const progress: RunProgress = { usage, lastSeq: () => lastSeq };
  const budget = given.tokenBudget?.(run);
  const options: RunOptions = {
    ...given,
    emit,
    metrics: countingMetrics,
    progress,
    ...(budget ? { budget } : {}),
  };
  if (!given.resume) emit({ type: 'session', session_id: run.sessionId, run_id: run.runId });
  logger.info(
    { ...log, mode: request.mode, model: request.model.name, resumedAt: given.resume?.lastSeq },
    given.resume ? 'run continues' : 'run started',
  );
  let result: RunResult & { status: 'done' | 'error' | 'aborted' };
  let final: AgentEvent;
  try {
    await conversation(options);
    // The session and run rows too, when they were written behind the start: `done` means stored.
    await given.written;
    final = { type: 'done', session_id: run.sessionId, usage };
    result = { status: 'done' };
  } catch (error) {
    let failure: AgentRunError;
    if (error instanceof RunSuspendedError && progress.suspended) {
      return suspended(options, progress.suspended, approvals);
    } else if (handingOver(signal)) {
      return handedOver(options, approvals);
    } else if (signal.aborted || error instanceof TurnAbortedError) {
      failure =
        signal.reason instanceof AgentRunError ? signal.reason : new AgentRunError('run_aborted');
    } else if (error instanceof AgentRunError) {
      failure = error;
    } else if (isDependencyUnavailable(error)) {
      logger.warn({ ...log, err: error }, 'run failed: a dependency is unavailable');
      failure = new AgentRunError('unavailable');
    } else {
      logger.error({ ...log, err: error }, 'run failed');
      failure = new AgentRunError('internal_error');
    }
    final = { type: 'error', code: failure.code, message: failure.message };
    result = { status: signal.aborted ? 'aborted' : 'error', code: failure.code };
  }
  await Promise.all(approvals);
  // The run's row must exist to record its end.
  await given.written?.catch(() => undefined);
  await sessions
    .finishRun(run.runId, result.status, result.code, usage)
    .catch((err: unknown) => logger.warn({ ...log, err }, 'could not record the end of a run'));
  // An ended run is never taken over: its turn record (the user's tool-call arguments) goes.
  await options
    .forgetTurn?.()
    .catch((err: unknown) => logger.warn({ ...log, err }, 'could not delete the turn record'));
  // Free the session before the last event: a client that got `done` may invoke again at once.
  // The final answer's tokens go out in the same tick (one write, auto-pipelined), counted
  // before `done`.
  await Promise.all([
    budget?.settle(),
    options.release().catch((err: unknown) => logger.warn({ ...log, err }, 'lease release failed')),
  ]);
  emit(final);
  logger.info({ ...log, status: result.status, code: result.code }, 'run ended');
  return result;
}

/**
 * Ends this holder's part of a suspended run: approvals recorded, the session kept locked until
 * the last approval's timeout (plus a minute) for the resume, and `suspended` as the last event.
 */
async function suspended(
  options: RunOptions,
  turn: PendingTurn,
  approvals: Promise<void>[],
): Promise<RunResult> {
  const { run, logger, emit } = options;
  const log = { runId: run.runId, sessionId: run.sessionId, userId: run.userId };
  await Promise.all(approvals);
  const held = heldApprovals(turn);
  const last = Math.max(...held.map((a) => Date.parse(a.expires_at)));
  await Promise.all([
    options.budget?.settle(),
    options
      .release(Math.max(0, last - Date.now()) + SUSPEND_HOLD_MARGIN_MS)
      .catch((err: unknown) => logger.warn({ ...log, err }, 'lease hand-over failed')),
  ]);
  emit({ type: 'suspended', run_id: run.runId, approvals: held });
  logger.info({ ...log, approvals: held.length }, 'run suspended');
  return { status: 'suspended' };
}

/**
 * Ends this holder's part of a run handed over (see `RunHandOver`): nothing more is stored or
 * sent, the session is freed, and the run stays `running` for a takeover from its last step.
 */
async function handedOver(options: RunOptions, approvals: Promise<void>[]): Promise<RunResult> {
  const { run, logger } = options;
  const log = { runId: run.runId, sessionId: run.sessionId, userId: run.userId };
  await Promise.all(approvals);
  // Its events in the run log and its rows first: a takeover continues from them.
  await options.durable?.();
  await options.written?.catch(() => undefined);
  await Promise.all([
    options.budget?.settle(),
    options.release().catch((err: unknown) => logger.warn({ ...log, err }, 'lease release failed')),
  ]);
  logger.info(log, 'run handed over');
  return { status: 'handed_over' };
}

/** How long a suspended run's session stays locked after its last approval's timeout. */
const SUSPEND_HOLD_MARGIN_MS = 60_000;

async function conversation(options: RunOptions): Promise<void> {
  const { run, sessions, settings, emit } = options;
  const { request } = run;
  const limits = settings.limits;
  const resume = options.resume;
  // The session and run rows (written behind the start, or before it): every write waits.
  const written = options.written ?? Promise.resolve();
  // A session new with this run has nothing stored to read.
  const fresh = options.freshSession === true && !resume;
  // Re-read under the lease (the claim read the state before it), in parallel with the tools,
  // which may read the user's earlier turns from the same read.
  const storedRead = fresh ? Promise.resolve([]) : sessions.messages(run);
  const sourcesRun: RunInfo = {
    ...run,
    earlierUserTurns: () =>
      storedRead.then((stored) => userTurns(stored.length > 0 ? stored : request.history)),
  };
  const [session, stored, { registry, promptSections, events }] = await Promise.all([
    fresh ? null : sessions.find(run.sessionId, run.userId),
    storedRead,
    buildRegistry({ ...options, run: sourcesRun }),
  ]);
  // A resumed run's opening events went out before; its conversation is stored.
  if (!resume) for (const event of events) emit(event);
  const state: SessionState = session?.state ?? { todos: [] };
  if (resume && (resume.step > 0 || (await sessions.hasRunMessages(run.runId)))) {
    return answer(options, {
      registry,
      promptSections,
      state,
      history: stored,
      acceptedPlan: undefined,
      userStored: Promise.resolve(),
      stepsTaken: resume.step,
      ...(resume.pendingTurn ? { pending: resume.pendingTurn } : {}),
      ...(resume.answerCut ? { answerCut: true } : {}),
    });
  }
  let history = stored;
  if (history.length === 0 && request.history.length > 0) {
    // A session the service has not seen: the client's history starts the stored conversation.
    history = request.history.map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
    if (!options.openingStored) {
      await written;
      await sessions.append(run, run.runId, history);
    }
  }

  let acceptedPlan: { summary: string; steps: string[] } | undefined;
  if (request.mode === 'agent' && state.pendingPlan) {
    acceptedPlan = state.pendingPlan;
    state.pendingPlan = undefined;
    state.todos = acceptedPlan.steps.map((content) => ({ content, status: 'pending' as const }));
    emit({ type: 'plan', status: 'accepted', ...acceptedPlan });
    emit({ type: 'todos', todos: state.todos });
    await written;
    await sessions.saveState(run, state);
  }

  const user = userMessage(request.message, request.attachments, limits);
  // Stored while the model starts answering (with the run's rows when they open a new
  // session); every later write of the run waits for it.
  const userStored = options.openingStored
    ? written
    : written.then(() => sessions.append(run, run.runId, [user]));
  userStored.catch(() => undefined);
  try {
    await answer(options, {
      registry,
      promptSections,
      state,
      history,
      user,
      acceptedPlan,
      userStored,
      stepsTaken: resume?.step ?? 0,
      ...(resume?.pendingTurn ? { pending: resume.pendingTurn } : {}),
    });
  } finally {
    await userStored;
  }
}

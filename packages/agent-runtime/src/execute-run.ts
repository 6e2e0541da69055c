import type { Logger } from '@agent-backend/logger';
import type { AgentMetrics } from '@agent-backend/metrics';
import { isDependencyUnavailable, type AgentEvent } from '@agent-backend/protocol';
import { runAgentLoop } from './agent-loop.js';
import type { ChatMessage } from './chat-message.js';
import { contextSection, fitHistory, userMessage } from './context.js';
import { AgentRunError } from './errors.js';
import { createLlmClient } from './llm-client.js';
import { TurnAbortedError } from './model-turn.js';
import type { ModelUrlGuard } from './model-url-guard.js';
import { proposePlanTool, writeTodosTool } from './planning-tools.js';
import type { SessionRepository } from './session-repository.js';
import type { SessionState } from './session-state.js';
import type { AgentSettings } from './settings.js';
import { systemPrompt } from './system-prompt.js';
import {
  availability,
  ToolRegistry,
  type AgentTool,
  type RunContribution,
  type RunInfo,
  type ToolContext,
  type ToolSource,
} from './tool.js';
import type { BeforeToolCall } from './tool-execution.js';
import { boundRunTools, toolsLimitedNotice } from './tool-bounds.js';
import { traced } from './traced.js';

/** How a run ended. */
export interface RunResult {
  readonly status: 'done' | 'error' | 'aborted';
  readonly code?: string;
}

/** What every run of a runner shares: the tools, the hooks, the log and the meters. */
export interface RunEngines {
  readonly logger: Logger;
  readonly toolSources?: readonly ToolSource[];
  /** Per run: the hook before each tool executes (HITL); absent: tools run at once. */
  readonly beforeToolCall?: (run: RunInfo) => BeforeToolCall | undefined;
  /**
   * The SSRF guard for `llm_config.baseUrl` (see `createLlmClient`); absent: base URLs are
   * reached with the platform `fetch` (operator-configured models, tests).
   */
  readonly modelUrlGuard?: ModelUrlGuard;
  /** Runs by mode and outcome, their duration, model latency and tokens. @default none */
  readonly metrics?: AgentMetrics;
}

interface ExecuteRunOptions extends RunEngines {
  readonly run: RunInfo;
  readonly sessions: SessionRepository;
  readonly settings: AgentSettings;
  emit(event: AgentEvent): void;
  /** Before a turn's tools execute: resolves once the events so far are durable (run log). */
  beforeTools?(): Promise<void>;
  /** Frees the session; called after everything is stored and before the last event. */
  release(): Promise<void>;
}

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
  let lastSeq = 0;
  const emit = (event: AgentEvent): void => {
    lastSeq++;
    if (event.type === 'approval_result') {
      approvals.push(
        sessions
          .recordApproval(run, event)
          .catch((err: unknown) => logger.warn({ ...log, err }, 'could not record an approval')),
      );
    }
    given.emit(event);
  };
  // The tokens each model request reports, summed for the run (stored with it, sent in `done`).
  const usage = { prompt_tokens: 0, completion_tokens: 0 };
  const metrics = given.metrics;
  const countingMetrics: AgentMetrics = {
    runStarted: (mode) => metrics?.runStarted(mode) ?? (() => undefined),
    streamsOpen: metrics?.streamsOpen ?? { inc: () => undefined, dec: () => undefined },
    firstToken: (seconds) => metrics?.firstToken(seconds),
    tokens: (prompt, completion) => {
      usage.prompt_tokens += prompt;
      usage.completion_tokens += completion;
      metrics?.tokens(prompt, completion);
    },
  };
  const progress: RunProgress = { usage, lastSeq: () => lastSeq };
  const options: ExecuteRunOptions & { progress: RunProgress } = {
    ...given,
    emit,
    metrics: countingMetrics,
    progress,
  };
  emit({ type: 'session', session_id: run.sessionId, run_id: run.runId });
  logger.info({ ...log, mode: request.mode, model: request.model.name }, 'run started');
  let result: RunResult;
  let final: AgentEvent;
  try {
    await conversation(options);
    final = { type: 'done', session_id: run.sessionId, usage };
    result = { status: 'done' };
  } catch (error) {
    let failure: AgentRunError;
    if (signal.aborted || error instanceof TurnAbortedError) {
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
  await sessions
    .finishRun(run.runId, result.status, result.code, usage)
    .catch((err: unknown) => logger.warn({ ...log, err }, 'could not record the end of a run'));
  // Free the session before the last event: a client that got `done` may invoke again at once.
  await options
    .release()
    .catch((err: unknown) => logger.warn({ ...log, err }, 'lease release failed'));
  emit(final);
  logger.info({ ...log, status: result.status, code: result.code }, 'run ended');
  return result;
}

/** What a step stores besides its messages: where the run is (see RunState). */
interface RunProgress {
  readonly usage: { prompt_tokens: number; completion_tokens: number };
  lastSeq(): number;
}

type RunOptions = ExecuteRunOptions & { readonly progress: RunProgress };

async function conversation(options: RunOptions): Promise<void> {
  const { run, sessions, settings, emit } = options;
  const { request } = run;
  const limits = settings.limits;
  // Re-read under the lease (the claim read the state before it), in parallel with the tools,
  // which may read the user's earlier turns from the same read.
  const storedRead = sessions.messages(run);
  const sourcesRun: RunInfo = {
    ...run,
    earlierUserTurns: () =>
      storedRead.then((stored) => userTurns(stored.length > 0 ? stored : request.history)),
  };
  const [session, stored, { registry, promptSections, events }] = await Promise.all([
    sessions.find(run.sessionId, run.userId),
    storedRead,
    buildRegistry({ ...options, run: sourcesRun }),
  ]);
  for (const event of events) emit(event);
  const state: SessionState = session?.state ?? { todos: [] };
  let history = stored;
  if (history.length === 0 && request.history.length > 0) {
    // A session the service has not seen: the client's history starts the stored conversation.
    history = request.history.map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
    await sessions.append(run, run.runId, history);
  }

  let acceptedPlan: { summary: string; steps: string[] } | undefined;
  if (request.mode === 'agent' && state.pendingPlan) {
    acceptedPlan = state.pendingPlan;
    state.pendingPlan = undefined;
    state.todos = acceptedPlan.steps.map((content) => ({ content, status: 'pending' as const }));
    emit({ type: 'plan', status: 'accepted', ...acceptedPlan });
    emit({ type: 'todos', todos: state.todos });
    await sessions.saveState(run, state);
  }

  const user = userMessage(request.message, request.attachments, limits);
  // Stored while the model starts answering; every later write of the run waits for it.
  const userStored = sessions.append(run, run.runId, [user]);
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
    });
  } finally {
    await userStored;
  }
}

interface Prepared {
  readonly registry: ToolRegistry;
  readonly promptSections: readonly string[];
  readonly state: SessionState;
  readonly history: readonly ChatMessage[];
  readonly user: ChatMessage;
  readonly acceptedPlan: { summary: string; steps: string[] } | undefined;
  readonly userStored: Promise<void>;
}

/** The model part of the run: prompt, client, loop. */
async function answer(options: RunOptions, prepared: Prepared): Promise<void> {
  const { run, sessions, settings, emit } = options;
  const { request } = run;
  const { registry, promptSections, state, history, user, acceptedPlan, userStored } = prepared;
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
  const client = await createLlmClient(request.model, {
    timeoutMs: settings.llmTimeoutMs,
    maxRetries: settings.llmMaxRetries,
    // The operator's own model (`DEFAULT_LLM_*`) is configuration, not user input.
    ...(options.modelUrlGuard && request.model.chosenBy === 'request'
      ? { guard: options.modelUrlGuard }
      : {}),
  });
  const beforeToolCall = options.beforeToolCall?.(run);
  await runAgentLoop({
    client,
    model: request.model.name,
    temperature: request.model.temperature,
    apiKey: request.model.apiKey,
    messages: [
      { role: 'system', content: system },
      ...fitHistory(history, limits.historyChars),
      user,
    ],
    registry,
    context,
    maxSteps: settings.maxSteps,
    idleTimeoutMs: settings.llmIdleTimeoutMs,
    maxToolResultChars: limits.toolResultChars,
    maxParallelTools: settings.maxParallelTools,
    ...(beforeToolCall ? { beforeToolCall } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    emit,
    ...(options.beforeTools ? { beforeTools: options.beforeTools } : {}),
    commit: async (messages, step) => {
      await userStored;
      const { usage, lastSeq } = options.progress;
      await sessions.commitStep(run, messages, state, {
        step,
        lastSeq: lastSeq(),
        usage: { ...usage },
      });
    },
  });
}

/** The text of a conversation's user messages, oldest first. */
const userTurns = (messages: ReadonlyArray<{ role: string; content: unknown }>): string[] =>
  messages.flatMap((m) => (m.role === 'user' && typeof m.content === 'string' ? [m.content] : []));

/**
 * Built-in tools, then the sources' fill tools (the user's devices'), then the other sources'
 * tools, unique by name; at most `settings.maxTools` in all (see {@link boundRunTools} for what
 * is left out, and the `tools_limited` notice that says so).
 */
async function buildRegistry(options: ExecuteRunOptions): Promise<Assembled> {
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
interface Assembled {
  readonly registry: ToolRegistry;
  readonly promptSections: readonly string[];
  readonly events: readonly AgentEvent[];
}

const isToolList = (value: readonly AgentTool[] | RunContribution): value is readonly AgentTool[] =>
  Array.isArray(value);

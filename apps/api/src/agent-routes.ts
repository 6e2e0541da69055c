import {
  AgentRunError,
  AgentRunner,
  type AgentRunnerOptions,
  SessionBusyError,
  SessionNotFoundError,
  sessionLeaseHolder,
} from '@agent-backend/agent-runtime';
import { AppError, parseInput } from '@agent-backend/http-server';
import { createApprovalHook } from '@agent-backend/hitl';
import { knowledgeToolSource, type KnowledgeSearcher } from '@agent-backend/knowledge';
import { createMcpTools, mcpPolicy } from '@agent-backend/mcp-tools';
import type { NodeToolCaller } from '@agent-backend/node-rpc';
import {
  InvokeRequest,
  parseAgentStreamEventId,
  ResumeStreamParams,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { registerApprovalRoutes } from './agent/approval-routes.js';
import { LocalRun } from './agent/local-run.js';
import { remoteAttachKey, streamRemoteRun } from './agent/resume-remote.js';
import { RunLogWriter } from './agent/run-log-writer.js';
import { loadAgentSettings, type AgentRouteSettings } from './agent/settings.js';
import { SseStream } from './agent/sse-stream.js';
import { streamLocalRun } from './agent/stream-run.js';

export interface AgentRouteOptions {
  /** Tool calls to the user's nodes through the gateway; absent: runs get no node tools. */
  readonly nodeTools?: NodeToolCaller;
  /** Searches knowledge bases for `search_knowledge_base`; absent: runs never get the tool. */
  readonly searchKnowledge?: KnowledgeSearcher;
  /** More tools per run (MCP, OAuth, ...), see `ToolSource`. */
  readonly toolSources?: AgentRunnerOptions['toolSources'];
  /** The hook before each tool call (human-in-the-loop approval). */
  readonly beforeToolCall?: AgentRunnerOptions['beforeToolCall'];
  /** The SSRF guard for `llm_config.baseUrl`; absent: base URLs are reached unchecked (tests). */
  readonly modelUrlGuard?: AgentRunnerOptions['modelUrlGuard'];
  /** Overrides the `AGENT_*` environment (tests). */
  readonly settings?: AgentRouteSettings;
}

/**
 * Largest invoke body. Above the server-wide 1 MiB because context files travel in the body;
 * they are cut to the documented context limits before they reach the model.
 */
export const INVOKE_BODY_LIMIT = 4 * 1024 * 1024;

/**
 * `POST /api/agent/invoke` (spec 4.2): runs the agent and streams its events as SSE.
 * `GET /api/agent/sessions/:session_id/stream` (beyond the spec): resumes the stream of the
 * session's current run after a dropped connection, on any replica, from `Last-Event-ID`.
 *
 * Every failure that can be known before the stream starts is an HTTP error (400 invalid body,
 * 401, 404 unknown or foreign session, 409 `session_busy`); after that, failures are the
 * stream's `error` event. On shutdown (`preClose`), running runs end with `server_shutdown`.
 */
export function registerAgentRoutes(
  context: ServiceContext,
  options: AgentRouteOptions = {},
): void {
  const { app, engines, logger, requireUser } = context;
  const settings = options.settings ?? loadAgentSettings(process.env);
  const mcpTools = createMcpTools({ policy: mcpPolicy(context.config), logger });
  app.addHook('onClose', () => mcpTools.close());
  const runner = new AgentRunner({
    db: engines.db,
    ephemeral: engines.ephemeral,
    logger,
    settings: settings.agent,
    ...(options.nodeTools ? { nodeTools: options.nodeTools } : {}),
    toolSources: [
      mcpTools.source,
      ...(options.searchKnowledge ? [knowledgeToolSource(options.searchKnowledge)] : []),
      ...(options.toolSources ?? []),
    ],
    // Human-in-the-loop approval (docs/hitl.md); a no-op for requests without `hitl_config`.
    beforeToolCall:
      options.beforeToolCall ??
      createApprovalHook({ ephemeral: engines.ephemeral, bus: engines.bus, logger }),
    ...(options.modelUrlGuard ? { modelUrlGuard: options.modelUrlGuard } : {}),
  });
  registerApprovalRoutes(context);
  const runs = new Map<string, LocalRun>();
  /** Runs not yet finished or not yet fully in the run log. */
  const settling = new Set<Promise<void>>();

  const invokeOptions = { preHandler: requireUser, bodyLimit: INVOKE_BODY_LIMIT };
  app.post('/api/agent/invoke', invokeOptions, async (request, reply) => {
    const body = parseInput(InvokeRequest, request.body);
    const userId = request.userId!;
    let prepared;
    try {
      prepared = await runner.prepare(userId, body);
    } catch (error) {
      if (error instanceof SessionNotFoundError) throw new AppError('not_found', error.message);
      if (error instanceof SessionBusyError) {
        throw new AppError('session_busy', error.message, { session_id: error.sessionId });
      }
      throw error;
    }
    const log = { runId: prepared.runId, sessionId: prepared.sessionId, userId };
    const writer = new RunLogWriter(engines.runLog, prepared.runId, (err) =>
      logger.warn({ ...log, err }, 'run log append failed; this run cannot be resumed elsewhere'),
    );
    const run = new LocalRun({
      prepared,
      writer,
      graceMs: settings.disconnectGraceMs,
      remoteAttached: async (runId) =>
        (await engines.ephemeral.get(remoteAttachKey(runId))) !== null,
      onError: (err) => logger.error({ ...log, err }, 'run crashed'),
    });
    runs.set(run.runId, run);
    const settled = run.finished.then(() => writer.drained());
    settling.add(settled);
    void settled.then(() => {
      runs.delete(run.runId);
      settling.delete(settled);
    });
    const stream = new SseStream(reply, settings.keepaliveMs);
    await streamLocalRun(run, stream, 0);
  });

  app.get(
    '/api/agent/sessions/:session_id/stream',
    { preHandler: requireUser },
    async (request, reply) => {
      const { session_id: sessionId } = parseInput(ResumeStreamParams, request.params, 'path');
      const userId = request.userId!;
      const header = request.headers['last-event-id'];
      const query = (request.query as Record<string, unknown>).last_event_id;
      const lastEventId =
        typeof header === 'string' ? header : typeof query === 'string' ? query : undefined;
      const position = lastEventId === undefined ? null : parseAgentStreamEventId(lastEventId);
      if (lastEventId !== undefined && !position) {
        throw new AppError('invalid_request', 'invalid Last-Event-ID', [
          { path: 'Last-Event-ID', message: 'must be "<run_id>:<seq>" as sent in an event id' },
        ]);
      }
      const session = await runner.sessions.find(sessionId, userId);
      if (!session) throw new AppError('not_found', `session ${sessionId} not found`);
      const runId = position?.runId ?? session.lastRunId;
      const owner = runId ? await runner.sessions.findRun(runId) : null;
      if (!runId || !owner || owner.sessionId !== sessionId || owner.userId !== userId) {
        throw new AppError('not_found', `session ${sessionId} has no run to resume`);
      }
      const afterSeq = position?.seq ?? 0;
      const local = runs.get(runId);
      if (local) return streamLocalRun(local, new SseStream(reply, settings.keepaliveMs), afterSeq);
      if (!(await engines.runLog.info(runId))) {
        throw new AppError('not_found', `the stream of run ${runId} is no longer available`);
      }
      await streamRemoteRun(
        {
          runLog: engines.runLog,
          ephemeral: engines.ephemeral,
          runId,
          sessionId,
          afterSeq,
          keepaliveMs: settings.keepaliveMs,
          isRunAlive: async () =>
            (await sessionLeaseHolder(engines.ephemeral, sessionId)) === runId,
        },
        new SseStream(reply, settings.keepaliveMs),
      );
    },
  );

  app.addHook('preClose', async () => {
    for (const run of runs.values()) run.abort(new AgentRunError('server_shutdown'));
    await Promise.all([...settling]);
  });
}

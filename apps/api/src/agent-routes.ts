import type { Response } from 'express';
import type { Agent } from '@agent-backend/agent';
import {
  AgentRunError,
  ConversationRepository,
  SessionBusyError,
  sessionLeaseHolder,
  UsageRepository,
} from '@agent-backend/agent-runtime';
import { AppError, type ResponseDoc, type RouteDocs } from '@agent-backend/http-server';
import {
  AgentEvent,
  AgentStreamEventId,
  InvokeRequest,
  ResumeStreamParams,
  parseAgentStreamEventId,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { registerApprovalRoutes } from './agent/approval-routes.js';
import { LocalRun } from './agent/local-run.js';
import { refuseReservedSessionId } from './agent/reserved-session-id.js';
import { remoteAttachKey, streamRemoteRun } from './agent/resume-remote.js';
import { RunLogWriter } from './agent/run-log-writer.js';
import { toRunRequest } from './agent/run-request.js';
import { registerRunRoutes } from './agent/run-routes.js';
import { RunStopper } from './agent/run-stopper.js';
import { registerSessionRoutes } from './agent/session-routes.js';
import { registerUsageRoutes } from './agent/usage-routes.js';
import { SseStream } from './agent/sse-stream.js';
import type { OperatorServices } from './operator/operator-routes.js';
import { streamLocalRun } from './agent/stream-run.js';

/**
 * Largest invoke body. Above the server-wide 1 MiB because context files travel in the body;
 * they are cut to the documented context limits before they reach the model.
 */
export const INVOKE_BODY_LIMIT = 4 * 1024 * 1024;

/** The answer of invoke and of resuming: the run's events. */
const SSE_STREAM: ResponseDoc = {
  description:
    'An SSE stream (`text/event-stream`). Each event is an `id: <run_id>:<seq>` line (send it ' +
    'back as `Last-Event-ID` to resume) and a `data: <AgentEvent JSON>` line; comment lines ' +
    '(`:`) keep the connection alive. The last event is `done`, or `error` when the run failed ' +
    'after the stream started.',
  events: AgentEvent,
};

/**
 * `POST /api/agent/invoke` (spec 4.2): runs the agent and streams its events as SSE.
 * `GET /api/agent/sessions/:session_id/stream` (beyond the spec): resumes the stream of the
 * session's current run after a dropped connection, on any replica, from `Last-Event-ID`.
 *
 * Session ids are per user: a `session_id` names a session of the caller only (another user's
 * session of the same id is a different one), and the service's own ids (`chat:`, `task:`)
 * cannot be named at all. Every failure that can be known before the stream starts is an HTTP
 * error (400 invalid body or `session_id_reserved`, 401, 404 no such session or run to resume,
 * 409 `session_busy`); after that, failures are the stream's `error` event. On shutdown (`preClose`), running runs may finish during the drain;
 * those still running after it end with `server_shutdown`. Returns what the operator API acts
 * through (the conversations, usage, and the run stopper).
 */
export function registerAgentRoutes(context: ServiceContext, agent: Agent): OperatorServices {
  const { app, engines, logger, requireUser, limits } = context;
  const { runner, settings } = agent;
  const streamsOpen = context.metrics.agent.streamsOpen;
  registerApprovalRoutes(context);
  const runs = new Map<string, LocalRun>();
  const conversations = new ConversationRepository(engines.db);
  const stopper = new RunStopper(engines.bus, runs, conversations, logger);
  registerSessionRoutes(context, conversations, stopper);
  registerRunRoutes(context, conversations, stopper);
  const usage = new UsageRepository(engines.db);
  registerUsageRoutes(context, usage);
  /** Runs not yet finished or not yet fully in the run log. */
  const settling = new Set<Promise<void>>();
  const openStream = (reply: Response) =>
    new SseStream(reply, {
      keepaliveMs: settings.keepaliveMs,
      open: streamsOpen,
      stallTimeoutMs: settings.sseStallTimeoutMs,
      onStall: (unsent) =>
        logger.warn(
          { unsent, stallTimeoutMs: settings.sseStallTimeoutMs },
          'closing slow SSE consumer',
        ),
    });

  const invokeOptions = {
    body: InvokeRequest,
    preHandler: requireUser,
    limit: limits.rate('invoke'),
    bodyLimit: INVOKE_BODY_LIMIT,
    doc: {
      tag: 'agent',
      summary: 'Run the agent and stream its events',
      description:
        'Runs the agent on `message` and answers with the run as an SSE stream. The user is the ' +
        "access token's `sub`. A `session_id` names a session of this user only (another " +
        "user's session of the same id is a different one); ids starting with `chat:` or `task:` " +
        "are the service's own and refused (400 `session_id_reserved`). Failures known before " +
        'the stream starts are HTTP errors (409 `session_busy`: a run of the session is still ' +
        'going; 429 `rate_limited`: over `RATE_LIMIT_INVOKE_PER_MINUTE`, or the user already has ' +
        '`MAX_CONCURRENT_RUNS_PER_USER` runs going); later ones are an `error` event that ends ' +
        'the stream. Bodies up to 4 MiB.',
      responses: { 200: SSE_STREAM },
      errors: ['session_id_reserved', 'session_busy'],
    } satisfies RouteDocs,
  };
  app.post('/api/agent/invoke', invokeOptions, async (request, reply) => {
    const body = request.body;
    const userId = request.userId;
    if (body.session_id !== undefined) refuseReservedSessionId(body.session_id);
    // Before any model request; freed when the run ends in any way (or by its lease).
    const releaseSlot = await limits.runSlot(userId);
    let prepared;
    try {
      prepared = await runner.prepare(toRunRequest(userId, body));
    } catch (error) {
      await releaseSlot();
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
    void run.finished.then(releaseSlot, releaseSlot);
    const settled = run.finished.then(() => writer.drained());
    settling.add(settled);
    void settled.then(() => {
      runs.delete(run.runId);
      settling.delete(settled);
    });
    const stream = openStream(reply);
    await streamLocalRun(run, stream, 0);
  });

  app.get(
    '/api/agent/sessions/:session_id/stream',
    {
      params: ResumeStreamParams,
      preHandler: requireUser,
      doc: {
        tag: 'agent',
        summary: "Resume the stream of a session's current run",
        description:
          'After a dropped connection, on any API replica: the events after `Last-Event-ID` (or ' +
          'all of the run when none is given), then the live events until the run ends. Only a ' +
          "session of the caller's own; `chat:` and `task:` ids are refused (400 " +
          '`session_id_reserved`).',
        parameters: [
          {
            in: 'header',
            name: 'Last-Event-ID',
            description: 'The `id` of the last event received: `<run_id>:<seq>`.',
            schema: AgentStreamEventId,
          },
          {
            in: 'query',
            name: 'last_event_id',
            description: 'The same as `Last-Event-ID`, for clients that cannot set headers.',
            schema: AgentStreamEventId,
          },
        ],
        responses: { 200: SSE_STREAM },
        errors: ['session_id_reserved', 'not_found'],
      },
    },
    async (request, reply) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const userId = request.userId;
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
      if (local) return streamLocalRun(local, openStream(reply), afterSeq);
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
            (await sessionLeaseHolder(engines.ephemeral, userId, sessionId)) === runId,
        },
        openStream(reply),
      );
    },
  );

  // Shutdown drain: new requests already get 503 and no new connection is accepted; running
  // runs may finish for three quarters of SHUTDOWN_TIMEOUT_MS, the rest end with
  // `server_shutdown` (the last quarter closes streams and engines).
  app.addHook('preClose', async () => {
    const drainMs = Math.floor(context.config.SHUTDOWN_TIMEOUT_MS * 0.75);
    if (settling.size > 0) {
      logger.info({ runs: runs.size, drainMs }, 'shutdown: letting running runs finish');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...settling]),
        new Promise((resolve) => (timer = setTimeout(resolve, drainMs))),
      ]);
      clearTimeout(timer);
    }
    for (const run of runs.values()) run.abort(new AgentRunError('server_shutdown'));
    await Promise.all([...settling]);
    await stopper.close();
  });
  return { conversations, usage, runs: stopper };
}

import type { Response } from 'express';
import {
  enqueueRunJob,
  hostRun,
  RunStopper,
  type Agent,
  type HostedRun,
  type RunJobsDeps,
} from '@agent-backend/agent';
import {
  AgentRunError,
  ConversationRepository,
  newRunId,
  RunRepository,
  SessionBusyError,
  UsageRepository,
} from '@agent-backend/agent-runtime';
import { AppError, type RouteDocs } from '@agent-backend/http-server';
import { BackgroundRunAccepted, InvokeRequest } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { registerApprovalRoutes } from './agent/approval-routes.js';
import { registerJoinRoutes, SSE_STREAM } from './agent/join-routes.js';
import { refuseReservedSessionId } from './agent/reserved-session-id.js';
import { toRunRequest } from './agent/run-request.js';
import { registerRunRoutes } from './agent/run-routes.js';
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

/**
 * `POST /api/agent/invoke` (spec 4.2): runs the agent and streams its events as SSE, or (with
 * `background: true`, beyond the spec) queues the run for the worker role and answers 202.
 * Joining a run's stream (`GET /api/agent/sessions/:session_id/stream`,
 * `GET /api/agent/runs/:run_id/stream`): agent/join-routes.ts.
 *
 * Session ids are per user: a `session_id` names a session of the caller only (another user's
 * session of the same id is a different one), and the service's own ids (`chat:`, `task:`)
 * cannot be named at all. Every failure that can be known before the stream starts is an HTTP
 * error (400 invalid body or `session_id_reserved`, 401, 404 no such session or run to resume,
 * 409 `session_busy`); after that, failures are the stream's `error` event. On shutdown
 * (`preClose`), runs waiting for approvals suspend, running runs may finish during the drain;
 * those still running after it end with `server_shutdown`. Returns what the operator API acts
 * through (the conversations, usage, and the run stopper).
 */
export function registerAgentRoutes(context: ServiceContext, agent: Agent): OperatorServices {
  const { app, engines, logger, requireUser, limits } = context;
  const { runner, settings } = agent;
  const streamsOpen = context.metrics.agent.streamsOpen;
  const resume = (runId: string) =>
    enqueueRunJob(
      engines.jobs,
      { run_id: runId, kind: 'resume' },
      { jobId: `resume-${runId}-${Date.now()}` },
    );
  registerApprovalRoutes(context, { resume, takeover: settings.takeover });
  const runs = new Map<string, HostedRun>();
  const conversations = new ConversationRepository(engines.db);
  const stopper = new RunStopper(
    engines.bus,
    runs,
    conversations,
    engines.runLog,
    logger,
    new RunRepository(engines.db),
    engines.ephemeral,
  );
  registerSessionRoutes(context, conversations, stopper);
  registerRunRoutes(context, conversations, stopper);
  const usage = new UsageRepository(engines.db);
  registerUsageRoutes(context, usage);
  /** Runs not yet finished or not yet fully in the run log. */
  const settling = new Set<Promise<unknown>>();
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
  registerJoinRoutes(context, agent, runs, openStream);
  const hosting: RunJobsDeps = {
    engines,
    runner,
    logger,
    settings: {
      disconnectGraceMs: settings.disconnectGraceMs,
      ...(settings.suspendAfterMs !== undefined ? { suspendAfterMs: settings.suspendAfterMs } : {}),
    },
  };

  const invokeOptions = {
    body: InvokeRequest,
    preHandler: requireUser,
    limit: limits.rateAndAdmit('invoke', newRunId),
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
        '`MAX_CONCURRENT_RUNS_PER_USER` runs going or `MAX_OPEN_STREAMS_PER_USER` streams open; ' +
        "429 `budget_exceeded`: the user's daily token budget is used up); later ones are an " +
        '`error` event that ends the stream (`budget_exceeded` when the budget runs out ' +
        'during the run). Bodies up to 4 MiB. With `background: true` (beyond the spec) the ' +
        'answer is 202 `{ run_id, session_id }` at once: the run executes on a worker, holding ' +
        "one of the user's `MAX_CONCURRENT_RUNS_PER_USER` slots until it ends (background " +
        'and streamed runs count together), and its events are read with ' +
        '`GET /api/agent/runs/:run_id/stream`, joined and left at will.',
      responses: {
        200: SSE_STREAM,
        202: { description: 'A background run was queued.', json: BackgroundRunAccepted },
      },
      errors: ['session_id_reserved', 'session_busy', 'budget_exceeded', 'rate_limited'],
    } satisfies RouteDocs,
  };
  app.post('/api/agent/invoke', invokeOptions, async (request, reply) => {
    const body = request.body;
    const userId = request.userId;
    if (body.session_id !== undefined) refuseReservedSessionId(body.session_id);
    // Taken before any model request, with the invoke rate (the route's `limit` hook): the token
    // budget, a run slot (freed when the run ends in any way, or by its lease) and a stream slot
    // (freed when this response ends, or with the last event). A background run's slot is named after the run: the
    // worker running it holds the same slot.
    const { runId, run: slot, releaseStream } = limits.admitted(reply);
    const releaseSlot = slot.release;
    let prepared;
    try {
      prepared = await runner.prepare(
        { ...toRunRequest(userId, body), budgetChecked: true },
        // A streamed run's rows are written while its model request starts.
        body.background ? { background: true, runId } : { runId, writeBehind: true },
      );
    } catch (error) {
      await Promise.all([releaseSlot(), releaseStream()]);
      if (error instanceof SessionBusyError) {
        throw new AppError('session_busy', error.message, { session_id: error.sessionId });
      }
      throw error;
    }
    if (body.background) {
      // The worker continues it from the stored request; the session stays locked meanwhile,
      // and the run slot stays held for the worker to take (or for its lease, if none does).
      // Left before the job exists, so nothing here touches the slot once a worker may hold it
      // (in the all-in-one the worker takes it in this process); released if the job never is.
      try {
        await prepared.handOver();
        slot.leave();
        await enqueueRunJob(
          engines.jobs,
          { run_id: prepared.runId, kind: 'start' },
          { jobId: `start-${prepared.runId}` },
        );
      } catch (error) {
        await Promise.all([prepared.cancel(), releaseSlot()]);
        throw error;
      } finally {
        await releaseStream();
      }
      const accepted: BackgroundRunAccepted = {
        run_id: prepared.runId,
        session_id: prepared.sessionId,
      };
      reply.status(202).send(accepted);
      return;
    }
    // Both slots are freed with the append of the run's last event (the same Redis round trip);
    // when there is none (suspended, handed over), when it ends as below.
    const run = hostRun(hosting, prepared, {
      abortWhenAbandoned: true,
      withFinalEvent: () => void Promise.all([releaseSlot(), releaseStream()]),
    });
    runs.set(run.runId, run);
    void run.finished.then(releaseSlot, releaseSlot);
    settling.add(run.finished);
    void run.finished.then(() => {
      runs.delete(run.runId);
      settling.delete(run.finished);
    });
    const stream = openStream(reply);
    try {
      await streamLocalRun(run, stream, 0, settings.suspendAfterMs !== undefined);
    } finally {
      await releaseStream();
    }
  });

  // Shutdown drain: new requests already get 503 and no new connection is accepted; running
  // runs may finish for three quarters of SHUTDOWN_TIMEOUT_MS, the rest end with
  // `server_shutdown` (the last quarter closes streams and engines).
  app.addHook('preClose', async () => {
    // A run waiting for approvals suspends at once: its resume happens on a worker.
    for (const run of runs.values()) run.suspendIfWaiting();
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

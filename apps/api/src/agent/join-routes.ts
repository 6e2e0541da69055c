import type { Request, Response } from 'express';
import { unstoredRun, type Agent, type HostedRun } from '@agent-backend/agent';
import { sessionLeaseHolder } from '@agent-backend/agent-runtime';
import { AppError, type ResponseDoc, type RouteDocs } from '@agent-backend/http-server';
import {
  AgentEvent,
  AgentStreamEventId,
  ResumeStreamParams,
  RunParams,
  parseAgentStreamEventId,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { refuseReservedSessionId } from './reserved-session-id.js';
import { streamRemoteRun } from './resume-remote.js';
import type { SseStream } from './sse-stream.js';
import { streamLocalRun } from './stream-run.js';

/** The answer of invoke and of joining a run: the run's events. */
export const SSE_STREAM: ResponseDoc = {
  description:
    'An SSE stream (`text/event-stream`). Each event is an `id: <run_id>:<seq>` line (send it ' +
    'back as `Last-Event-ID` to resume) and a `data: <AgentEvent JSON>` line; comment lines ' +
    '(`:`) keep the connection alive. The last event is `done`, or `error` when the run failed ' +
    'after the stream started, or `suspended` when the run waits for approvals with no server ' +
    'holding it (docs/hitl.md).',
  events: AgentEvent,
};

const POSITION_PARAMETERS: RouteDocs['parameters'] = [
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
];

/** Where a joining client's stream starts: `Last-Event-ID` (header or query), if any. */
function position(request: Request): { runId: string; seq: number } | null {
  const header = request.headers['last-event-id'];
  const query = (request.query as Record<string, unknown>).last_event_id;
  const lastEventId =
    typeof header === 'string' ? header : typeof query === 'string' ? query : undefined;
  if (lastEventId === undefined) return null;
  const parsed = parseAgentStreamEventId(lastEventId);
  if (!parsed) {
    throw new AppError('invalid_request', 'invalid Last-Event-ID', [
      { path: 'Last-Event-ID', message: 'must be "<run_id>:<seq>" as sent in an event id' },
    ]);
  }
  return parsed;
}

/**
 * `GET /api/agent/sessions/:session_id/stream` and `GET /api/agent/runs/:run_id/stream`: a
 * client (re)joins a run's stream on any API replica, from the event after `Last-Event-ID`:
 * from memory when the run executes here, else from the run log (the run executes on another
 * replica or a worker, or is suspended and joins its resume).
 */
export function registerJoinRoutes(
  context: ServiceContext,
  agent: Agent,
  runs: ReadonlyMap<string, HostedRun>,
  openStream: (reply: Response) => SseStream,
): void {
  const { app, engines, requireUser, limits } = context;
  const { runner, settings } = agent;

  const holder = async (userId: string, sessionId: string) =>
    (await sessionLeaseHolder(engines.ephemeral, userId, sessionId)) ?? '';

  // A joined stream holds one of the user's `MAX_OPEN_STREAMS_PER_USER` stream slots while open
  // (a client may not keep many tabs of one run open).
  const join = async (
    reply: Response,
    run: { runId: string; sessionId: string; userId: string; status: string },
    afterSeq: number,
  ) => {
    const releaseStream = await limits.streamSlot(run.userId);
    try {
      await joinHeld(reply, run, afterSeq);
    } finally {
      await releaseStream();
    }
  };

  const joinHeld = async (
    reply: Response,
    run: { runId: string; sessionId: string; userId: string; status: string },
    afterSeq: number,
  ) => {
    const local = runs.get(run.runId);
    const showSuspended = settings.suspendAfterMs !== undefined;
    if (local && afterSeq >= local.firstSeq) {
      return streamLocalRun(local, openStream(reply), afterSeq, showSuspended);
    }
    const open = run.status === 'running' || run.status === 'suspended';
    if (!open && !(await engines.runLog.info(run.runId))) {
      throw new AppError('not_found', `the stream of run ${run.runId} is no longer available`);
    }
    await streamRemoteRun(
      {
        runLog: engines.runLog,
        ephemeral: engines.ephemeral,
        runId: run.runId,
        sessionId: run.sessionId,
        afterSeq,
        keepaliveMs: settings.keepaliveMs,
        isRunAlive: async () => {
          const holder = await sessionLeaseHolder(engines.ephemeral, run.userId, run.sessionId);
          if (holder === run.runId) return true;
          // Not held: alive while suspended, or while a worker will take it over.
          const now = await runner.sessions.findRun(run.runId);
          return now?.status === 'suspended' || (now?.status === 'running' && settings.takeover);
        },
      },
      openStream(reply),
    );
  };

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
          "`session_id_reserved`). A joined stream holds one of the user's " +
          '`MAX_OPEN_STREAMS_PER_USER` stream slots while open (429 `rate_limited` over it).',
        parameters: POSITION_PARAMETERS,
        responses: { 200: SSE_STREAM },
        errors: ['session_id_reserved', 'not_found', 'rate_limited'],
      },
    },
    async (request, reply) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const userId = request.userId;
      const at = position(request);
      // The session's current run: the one holding its lease, whose rows may still be being
      // written (the session row then names the run before it), else the last one stored.
      const [session, current] = await Promise.all([
        runner.sessions.find(sessionId, userId),
        at ? '' : holder(userId, sessionId),
      ]);
      const runId = at?.runId ?? (current || session?.lastRunId);
      const stored = runId ? await runner.sessions.findRun(runId) : null;
      // A run whose rows are still being written is named by its session's lease.
      const owner =
        stored && runId
          ? { ...stored, runId }
          : await unstoredRun(engines, userId, runId ?? '', sessionId);
      if (!owner) {
        throw new AppError(
          'not_found',
          session ? `session ${sessionId} has no run to resume` : `session ${sessionId} not found`,
        );
      }
      if (owner.sessionId !== sessionId || owner.userId !== userId) {
        throw new AppError('not_found', `session ${sessionId} has no run to resume`);
      }
      await join(reply, owner, at?.seq ?? 0);
    },
  );

  app.get(
    '/api/agent/runs/:run_id/stream',
    {
      params: RunParams,
      preHandler: requireUser,
      doc: {
        tag: 'agent',
        summary: "Join a run's stream: a background run, a resumed one, after a drop",
        description:
          'On any API replica, for any run of the caller: the events after `Last-Event-ID` (or ' +
          'all of them when none is given), then the live events until the run ends or ' +
          'suspends. A client may leave and join again at will; joining a suspended run waits ' +
          'for its resume. 404 for an unknown run or another user’s, or when its events are ' +
          'no longer kept (it ended more than the run-log retention ago). A joined stream ' +
          "holds one of the user's `MAX_OPEN_STREAMS_PER_USER` stream slots while open.",
        parameters: POSITION_PARAMETERS,
        responses: { 200: SSE_STREAM },
        errors: ['not_found', 'rate_limited'],
      },
    },
    async (request, reply) => {
      const { run_id: runId } = request.params;
      const at = position(request);
      if (at && at.runId !== runId) {
        throw new AppError('invalid_request', 'Last-Event-ID names another run', [
          { path: 'Last-Event-ID', message: `must be an event id of run ${runId}` },
        ]);
      }
      // A run whose rows are still being written is named by its run log and session lease.
      const owner =
        (await runner.sessions.findRun(runId)) ??
        (await unstoredRun(engines, request.userId, runId));
      if (!owner || owner.userId !== request.userId) {
        throw new AppError('not_found', `run ${runId} not found`);
      }
      await join(reply, { ...owner, runId }, at?.seq ?? 0);
    },
  );
}

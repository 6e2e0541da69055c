import {
  deleteTurnRecords,
  InvalidCursorError,
  type ConversationRepository,
} from '@agent-backend/agent-runtime';
import { AppError } from '@agent-backend/http-server';
import {
  ListMessagesQuery,
  ListSessionsQuery,
  MessageList,
  SessionDetail,
  SessionList,
  SessionParams,
  SessionSummary,
  UpdateSessionRequest,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { refuseReservedSessionId } from './reserved-session-id.js';
import type { RunStopper } from '@agent-backend/agent';

const SESSION_ERRORS = ['session_id_reserved', 'not_found'] as const;

/** A cursor no page handed out: the same 400 as any other invalid query field. */
async function withCursor<T>(list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (error) {
    if (error instanceof InvalidCursorError) {
      throw new AppError('invalid_request', 'invalid request query', [
        { path: 'cursor', message: 'is not a cursor this endpoint returned' },
      ]);
    }
    throw error;
  }
}

const notFound = (sessionId: string) => new AppError('not_found', `session ${sessionId} not found`);

/**
 * The conversations API over the caller's sessions (docs/protocol.md): list, read one, read its
 * messages, rename, delete. Only the caller's own sessions: another user's id answers 404 like
 * an unknown one; the service's own ids (`chat:`, `task:`) are refused as on invoke.
 */
export function registerSessionRoutes(
  { app, requireUser, engines }: ServiceContext,
  conversations: ConversationRepository,
  runs: RunStopper,
): void {
  app.get(
    '/api/agent/sessions',
    {
      query: ListSessionsQuery,
      preHandler: requireUser,
      doc: {
        tag: 'sessions',
        summary: "List the caller's sessions, latest activity first",
        description:
          'A page of sessions, latest activity first; `next_cursor` gives the next page (null on ' +
          'the last). Pages are keyset pages on (`updated_at`, `session_id`): sessions created ' +
          'or active while a client pages move to the top, so later pages neither repeat nor ' +
          'skip the others. `q` keeps the sessions whose title contains it. The service’s own ' +
          'sessions (chats, scheduled tasks) are not listed.',
        responses: { 200: { description: 'One page.', json: SessionList } },
      },
    },
    async (request) =>
      (await withCursor(() =>
        conversations.list(request.userId, request.query),
      )) satisfies SessionList,
  );

  app.get(
    '/api/agent/sessions/:session_id',
    {
      params: SessionParams,
      preHandler: requireUser,
      doc: {
        tag: 'sessions',
        summary: 'Read a session',
        description:
          'The list item of the session with its todo list, the plan waiting for the user and ' +
          'the mode and model of its last run.',
        responses: { 200: { description: 'The session.', json: SessionDetail } },
        errors: [...SESSION_ERRORS],
      },
    },
    async (request) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const session = await conversations.get({ userId: request.userId, sessionId });
      if (!session) throw notFound(sessionId);
      return session satisfies SessionDetail;
    },
  );

  app.get(
    '/api/agent/sessions/:session_id/messages',
    {
      params: SessionParams,
      query: ListMessagesQuery,
      preHandler: requireUser,
      doc: {
        tag: 'sessions',
        summary: "Read a session's stored conversation, oldest first",
        description:
          'User and assistant messages, tool calls with their arguments, tool results with the ' +
          'outcome of their approval, in the field names of the SSE events, a page at a time.',
        responses: { 200: { description: 'One page.', json: MessageList } },
        errors: [...SESSION_ERRORS],
      },
    },
    async (request) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const page = await withCursor(() =>
        conversations.messages({ userId: request.userId, sessionId }, request.query),
      );
      if (!page) throw notFound(sessionId);
      return page satisfies MessageList;
    },
  );

  app.patch(
    '/api/agent/sessions/:session_id',
    {
      params: SessionParams,
      body: UpdateSessionRequest,
      preHandler: requireUser,
      doc: {
        tag: 'sessions',
        summary: 'Rename a session',
        responses: { 200: { description: 'The session as listed.', json: SessionSummary } },
        errors: [...SESSION_ERRORS],
      },
    },
    async (request) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const key = { userId: request.userId, sessionId };
      if (!(await conversations.rename(key, request.body.title))) throw notFound(sessionId);
      const session = await conversations.get(key);
      if (!session) throw notFound(sessionId);
      const { todos: _todos, pending_plan: _plan, settings: _settings, ...summary } = session;
      return summary satisfies SessionSummary;
    },
  );

  app.delete(
    '/api/agent/sessions/:session_id',
    {
      params: SessionParams,
      preHandler: requireUser,
      doc: {
        tag: 'sessions',
        summary: 'Delete a session',
        description:
          'Cancels its running run (on whichever replica runs it) and waits for it to stop, ' +
          'then deletes the session with its messages, runs, approvals, todo list and sandbox, ' +
          'and the events of its runs kept for resuming streams (the run log).',
        responses: { 204: { description: 'Deleted.' } },
        errors: [...SESSION_ERRORS],
      },
    },
    async (request, reply) => {
      const { session_id: sessionId } = request.params;
      refuseReservedSessionId(sessionId);
      const key = { userId: request.userId, sessionId };
      const session = await conversations.get(key);
      if (!session) throw notFound(sessionId);
      if (session.active_run_id) await runs.stop(request.userId, session.active_run_id);
      const runIds = await conversations.delete(key);
      if (!runIds) throw notFound(sessionId);
      // The run log keeps a run's events for resuming, a turn record its tool calls for a
      // takeover; a deleted session's go now.
      await engines.runLog.delete(runIds);
      await deleteTurnRecords(engines.ephemeral, runIds);
      return reply.status(204).send();
    },
  );
}

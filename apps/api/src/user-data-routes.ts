import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { EraseMeRequest, ErasureResponse, OperatorUserParams } from '@agent-backend/protocol';
import { AppError } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';
import type { ErasureRecord, UserData } from '@agent-backend/user-data';
import type { OperatorRouter } from './operator/operator-router.js';

type Audit = ServiceContext['audit'];
type AuditedRequest = Parameters<Audit['record']>[1] & {
  log: { info(o: object, m: string): void; error(o: object, m: string): void };
};

/** The answer of an erasure on the wire. */
export function erasureResponse(record: ErasureRecord): ErasureResponse {
  return {
    erasure_id: record.erasureId,
    user_id: record.userId,
    status: 'done',
    removed: record.removed,
    requested_at: record.requestedAt.toISOString(),
    finished_at: (record.finishedAt ?? new Date()).toISOString(),
  };
}

/**
 * The caller's own data (docs/operations.md#export-and-erasure): `GET /api/me/export` streams
 * one tar archive of everything they own; `DELETE /api/me` erases it everywhere, its body's
 * `confirm` naming the caller.
 */
export function registerUserDataRoutes(
  { app, requireUser, audit }: ServiceContext,
  userData: UserData,
): void {
  app.get(
    '/api/me/export',
    {
      preHandler: requireUser,
      doc: {
        tag: 'user data',
        summary: 'Export everything the caller owns',
        description:
          'One tar archive, streamed: a JSON-lines file per kind of data (sessions, todos, ' +
          'messages, runs with their token usage, approvals, scheduled tasks and their runs, ' +
          'knowledge bases and documents, memories, skills, sandboxes, refresh tokens without ' +
          'their secrets, connected nodes), each knowledge document and skill file as uploaded, ' +
          'and `manifest.json` last with the count of each file. The layout is in ' +
          'docs/operations.md.',
        responses: ARCHIVE,
      },
    },
    async (request, reply) => sendExport(audit, userData, request.userId, request, reply, 'user'),
  );

  app.delete(
    '/api/me',
    {
      preHandler: requireUser,
      body: EraseMeRequest,
      doc: {
        tag: 'user data',
        summary: 'Erase everything the caller owns',
        description:
          "Stops the caller's runs still going (on whichever replica runs them), then erases " +
          "the caller's data everywhere it lives: every row of theirs in the store, " +
          'their run logs, presence, leases, limit counters and queued jobs and schedules in ' +
          'Redis, and their sandboxes with their files. Their refresh tokens are deleted and ' +
          'their access tokens (this one included) refused on every replica within 5 s; open ' +
          "WebSocket connections are closed with 4401. `confirm` must be the caller's user id. " +
          'An erasure cut short (a crashed replica) is finished by a worker. Answers with what ' +
          'was removed.',
        responses: { 200: { description: 'Erased.', json: ErasureResponse } },
        errors: ['confirmation_required'],
      },
    },
    async (request) => {
      if (request.body?.confirm !== request.userId) {
        throw new AppError(
          'confirmation_required',
          'erasing your data needs the body { "confirm": "<your user id>" }; nothing was erased',
        );
      }
      return erase(audit, userData, request.userId, request, 'user');
    },
  );
}

const ARCHIVE = {
  200: {
    description: 'The archive.',
    binary: 'application/x-tar',
    headers: { 'Content-Disposition': 'attachment; filename="user-data.tar"' },
  },
} as const;

/** Streams a user's archive and records `user.data_exported`. */
async function sendExport(
  audit: Audit,
  userData: UserData,
  userId: string,
  request: AuditedRequest,
  reply: Response,
  actor: 'user' | 'operator',
): Promise<Response> {
  request.log.info({ userId }, 'user data exported');
  await audit.record({ action: 'user.data_exported', userId, actor, details: {} }, request);
  reply.status(200);
  reply.setHeader('Content-Type', 'application/x-tar');
  reply.setHeader('Content-Disposition', 'attachment; filename="user-data.tar"');
  reply.setHeader('Cache-Control', 'no-store');
  // A failure once bytes went out cannot become an error body: the connection is cut, and
  // the client's archive is short (tar readers notice the missing end blocks).
  await pipeline(userData.exportUser(userId), reply).catch((error: unknown) => {
    request.log.error({ err: error }, 'user data export failed');
    reply.destroy();
  });
  return reply;
}

/**
 * Erases a user's data and records `user.data_erased`, naming only the erasure: the user's own
 * audit events went with their data.
 */
async function erase(
  audit: Audit,
  userData: UserData,
  userId: string,
  request: AuditedRequest,
  actor: 'user' | 'operator',
): Promise<ErasureResponse> {
  const record = await userData.eraseUser(userId);
  request.log.info(
    { userId, erasureId: record.erasureId, removed: record.removed },
    'user data erased',
  );
  await audit.record(
    {
      action: 'user.data_erased',
      userId: null,
      actor,
      details: { erasure_id: record.erasureId },
    },
    request,
  );
  return erasureResponse(record);
}

/**
 * The operator's equivalents (docs/operations.md, "Operator API"):
 * `GET /api/operator/users/:user_id/export` and `POST /api/operator/users/:user_id/erase` (the
 * operator credential is the confirmation).
 */
export function registerOperatorUserDataRoutes(
  router: OperatorRouter,
  { audit }: ServiceContext,
  userData: UserData,
): void {
  router.get(
    '/api/operator/users/:user_id/export',
    {
      params: OperatorUserParams,
      doc: {
        tag: 'operator',
        summary: 'Export everything a user owns',
        description: 'The archive `GET /api/me/export` gives the user (docs/operations.md).',
        responses: ARCHIVE,
      },
    },
    async (request, reply) =>
      sendExport(audit, userData, request.params.user_id, request, reply, 'operator'),
  );
  router.post(
    '/api/operator/users/:user_id/erase',
    {
      params: OperatorUserParams,
      // Its record names nobody, or the next erasure of the user would find it:
      // `user.data_erased` carries the erasure id that links it to the `erasures` row.
      auditSubject: 'nobody',
      doc: {
        tag: 'operator',
        summary: 'Erase everything a user owns',
        description:
          'What `DELETE /api/me` does for the user (their runs still going stopped first, ' +
          'then their data erased), without its confirmation field (the ' +
          'operator credential is the confirmation). Idempotent: erasing again answers with ' +
          'nothing removed.',
        responses: { 200: { description: 'Erased.', json: ErasureResponse } },
      },
    },
    async (request) => erase(audit, userData, request.params.user_id, request, 'operator'),
  );
}

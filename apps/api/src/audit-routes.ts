import { AuditEventList, AuditQuery, type AuditEvent } from '@agent-backend/protocol';
import type { AuditRecord, ServiceContext } from '@agent-backend/runtime';

/** A stored event in the API's shape. */
export const toAuditEvent = (record: AuditRecord): AuditEvent => ({
  event_id: record.eventId,
  occurred_at: record.occurredAt,
  action: record.action,
  user_id: record.userId,
  actor: record.actor,
  client_address: record.clientAddress,
  request_id: record.requestId,
  details: record.details,
});

/**
 * A page of the audit log, newest first: `limit` events older than `cursor` (an event id), and
 * the cursor of the next page (null on the last).
 */
export async function auditPage(
  { audit }: ServiceContext,
  query: AuditQuery & { user_id?: string },
): Promise<AuditEventList> {
  const records = await audit.page({
    ...(query.user_id !== undefined ? { userId: query.user_id } : {}),
    ...(query.action !== undefined ? { action: query.action } : {}),
    ...(query.cursor !== undefined ? { beforeEventId: query.cursor } : {}),
    limit: query.limit + 1,
  });
  const page = records.slice(0, query.limit);
  const last = page.at(-1);
  return {
    events: page.map(toAuditEvent),
    next_cursor: records.length > query.limit && last ? last.eventId : null,
  };
}

/** `GET /api/me/audit`: the caller's own security events (docs/operations.md, "Audit log"). */
export function registerAuditRoutes(context: ServiceContext): void {
  context.app.get(
    '/api/me/audit',
    {
      query: AuditQuery,
      preHandler: context.requireUser,
      doc: {
        tag: 'account',
        summary: "The caller's audit log, newest first",
        description:
          'Security events of the caller: tokens issued, refreshed from a new client and ' +
          'revoked, approvals decided, operator actions on the account, data exported or ' +
          'erased, with when, who acted and from which address. A page at a time ' +
          '(`next_cursor`); `action` keeps one kind. Kept `AUDIT_LOG_RETENTION_DAYS`.',
        responses: { 200: { description: 'One page.', json: AuditEventList } },
      },
    },
    async (request) =>
      (await auditPage(context, {
        ...request.query,
        user_id: request.userId,
      })) satisfies AuditEventList,
  );
}

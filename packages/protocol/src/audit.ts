import { z } from 'zod';
import { queryInteger } from './query-integer.js';

/*
 * The audit log (docs/operations.md): security events, who did what, when and from where.
 * `GET /api/me/audit` lists the caller's own, the operator API everyone's.
 */

/** Every action the service records (docs/operations.md describes each one's `details`). */
export const AuditAction = z.enum([
  'token.issued',
  'token.refreshed',
  'token.revoked',
  'user.tokens_revoked',
  'approval.decided',
  'key.rotated',
  'operator.call',
  'user.data_exported',
  'user.data_erased',
]);
export type AuditAction = z.infer<typeof AuditAction>;

/** One recorded event. `event_id` grows with each event; times are ISO 8601 UTC. */
export const AuditEvent = z.object({
  event_id: z.string(),
  occurred_at: z.string(),
  action: z.string(),
  /** The user the event concerns; null for events of no user (`key.rotated`). */
  user_id: z.string().nullable(),
  /** Who acted: `user`, `operator`, `login_layer`, `cli`, `service` or `anyone`. */
  actor: z.string(),
  /** The client address of the request; null for events outside HTTP (CLI commands). */
  client_address: z.string().nullable(),
  /** The request's `X-Request-Id`, to find its log lines. */
  request_id: z.string().nullable(),
  /** What happened, by action; never a token, key or secret. */
  details: z.record(z.string(), z.unknown()),
});
export type AuditEvent = z.infer<typeof AuditEvent>;

/** 200 answer of the audit routes: newest first; `next_cursor` is null on the last page. */
export const AuditEventList = z.object({
  events: z.array(AuditEvent),
  next_cursor: z.string().nullable(),
});
export type AuditEventList = z.infer<typeof AuditEventList>;

/** Query of `GET /api/me/audit`: `cursor` is the previous page's `next_cursor`. */
export const AuditQuery = z.object({
  action: AuditAction.optional(),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, 'is not a cursor this endpoint returned')
    .optional(),
  /** @default 50 */
  limit: queryInteger(1, 200).default(50),
});
export type AuditQuery = z.infer<typeof AuditQuery>;

/** Query of the operator's `GET /api/operator/audit`: everyone's events, or one user's. */
export const OperatorAuditQuery = AuditQuery.extend({
  user_id: z.string().min(1).max(128).optional(),
});
export type OperatorAuditQuery = z.infer<typeof OperatorAuditQuery>;

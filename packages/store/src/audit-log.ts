import type { Queryable } from './database.js';

/**
 * Who acted: a `user` (with their access token or refresh token), the `operator` (the operator
 * API, `ADMIN_TOKEN`), the operator's `login_layer` (`AUTH_SERVICE_TOKEN`), a `cli` command on
 * the operator's machine (`pnpm token:issue`, `token:revoke`, `keys:rotate`), the `service`
 * itself, or `anyone` (`POST /api/dev/tokens` with `DEV_TOKENS=true`: no credential at all).
 */
export type AuditActor = 'user' | 'operator' | 'login_layer' | 'cli' | 'service' | 'anyone';

/** One security event to record. Never put a token, a key or a secret in `details`. */
export interface AuditEntry {
  /** What happened: `token.issued`, `approval.decided`, ... (docs/operations.md lists them). */
  readonly action: string;
  /** The user the event concerns (whose tokens, approval or data); null when none. */
  readonly userId: string | null;
  readonly actor: AuditActor;
  /** Where from: the request's client address; absent outside HTTP. */
  readonly clientAddress?: string | null;
  /** The request's id (`X-Request-Id`), to find its log lines. */
  readonly requestId?: string | null;
  /** The event's particulars (an approval's outcome, a route, a count). */
  readonly details?: Record<string, unknown>;
}

/** A recorded event. Times are ISO 8601 UTC; `eventId` grows with each event. */
export interface AuditRecord {
  readonly eventId: string;
  readonly occurredAt: string;
  readonly action: string;
  readonly userId: string | null;
  readonly actor: string;
  readonly clientAddress: string | null;
  readonly requestId: string | null;
  readonly details: Record<string, unknown>;
}

/** A page of events, newest first. */
export interface AuditPageQuery {
  /** Only this user's events; absent: everyone's (the operator's view). */
  readonly userId?: string;
  readonly action?: string;
  /** Events older than this event id (the previous page's last). */
  readonly beforeEventId?: string;
  readonly limit: number;
}

interface AuditRow extends Record<string, unknown> {
  event_id: string;
  occurred_at: string;
  action: string;
  user_id: string | null;
  actor: string;
  client_address: string | null;
  request_id: string | null;
  details: Record<string, unknown> | null;
}

const toRecord = (row: AuditRow): AuditRecord => ({
  eventId: row.event_id,
  occurredAt: row.occurred_at,
  action: row.action,
  userId: row.user_id,
  actor: row.actor,
  clientAddress: row.client_address,
  requestId: row.request_id,
  details: row.details ?? {},
});

/**
 * The audit log (table `audit_log`): an append-only record of security events. Each event is
 * recorded once by the one process that handled it (the replica that served the request, the
 * CLI that ran), so replicas never write the same event twice. Rows are never updated (a rule
 * drops every UPDATE); the retention sweep deletes those past `AUDIT_LOG_RETENTION_DAYS`.
 */
export class AuditLog {
  constructor(private readonly db: Queryable) {}

  async record(entry: AuditEntry): Promise<void> {
    await this.db.query(
      `INSERT INTO audit_log (action, user_id, actor, client_address, request_id, details)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        entry.action,
        entry.userId,
        entry.actor,
        entry.clientAddress ?? null,
        entry.requestId ?? null,
        JSON.stringify(entry.details ?? {}),
      ],
    );
  }

  /** Newest first, `limit` at a time; page on with the last event's id as `beforeEventId`. */
  async page(query: AuditPageQuery): Promise<AuditRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (condition: (p: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (query.userId !== undefined) add((p) => `user_id = ${p}`, query.userId);
    if (query.action !== undefined) add((p) => `action = ${p}`, query.action);
    if (query.beforeEventId !== undefined)
      add((p) => `event_id < ${p}::bigint`, query.beforeEventId);
    params.push(query.limit);
    const { rows } = await this.db.query<AuditRow>(
      `SELECT event_id::text AS event_id,
              to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
              action, user_id, actor, client_address, request_id, details
         FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY audit_log.event_id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toRecord);
  }

  /** Deletes up to `batch` events recorded before `cutoff`, oldest first. @returns how many. */
  async purge(cutoff: Date, batch: number): Promise<number> {
    const { rowCount } = await this.db.query(
      `DELETE FROM audit_log WHERE event_id IN (
         SELECT event_id FROM audit_log WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2)`,
      [cutoff, batch],
    );
    return rowCount;
  }
}

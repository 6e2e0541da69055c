import type { Logger } from '@agent-backend/logger';
import {
  AuditLog,
  type AuditEntry,
  type AuditPageQuery,
  type Database,
} from '@agent-backend/store';

/** What an audit event takes from the HTTP request it came with. */
export interface AuditedRequest {
  /** The client address as Express reports it (the peer's, unless `trust proxy` is set). */
  readonly ip?: string | undefined;
  /** The request id (`X-Request-Id` or generated). */
  readonly id?: string | undefined;
  readonly socket?: { readonly remoteAddress?: string | undefined };
}

/**
 * The audit log as roles record to it (docs/operations.md, "Audit log"): `record(entry,
 * request)` takes who and where from the request (client address, request id). Recording
 * follows the action it records: a failure to write is logged (`audit event not recorded`,
 * with the event) and never turns a done action into an error answer.
 */
export class ServiceAudit {
  readonly log: AuditLog;

  constructor(
    db: Database,
    private readonly logger: Logger,
  ) {
    this.log = new AuditLog(db);
  }

  async record(
    entry: Omit<AuditEntry, 'clientAddress' | 'requestId'>,
    request?: AuditedRequest,
  ): Promise<void> {
    const full: AuditEntry = {
      ...entry,
      clientAddress: request ? (request.ip ?? request.socket?.remoteAddress ?? null) : null,
      requestId: request?.id ?? null,
    };
    try {
      await this.log.record(full);
    } catch (error) {
      this.logger.error({ err: error, audit: full }, 'audit event not recorded');
    }
  }

  page(query: AuditPageQuery) {
    return this.log.page(query);
  }
}

import { z } from 'zod';
import { SessionRepository } from '@agent-backend/agent-runtime';
import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import {
  fieldErrors,
  type ApprovalDecisionRequest,
  type ApprovalDecisionResponse,
  type FieldError,
} from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import {
  ApprovalStore,
  resolvedChannel,
  type ApprovalRecord,
  type ApprovalResolution,
} from './approval-store.js';

/** Stable codes of a refused decision; the HTTP route maps each to its status. */
export type DecisionErrorCode =
  | 'not_found'
  | 'decision_not_allowed'
  | 'invalid_request'
  | 'approval_closed'
  | 'approval_orphaned';

/** A decision that cannot be taken; `message` and `details` are safe to show the user. */
export class DecisionError extends Error {
  constructor(
    readonly code: DecisionErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'DecisionError';
  }
}

/** Run-log error code recorded when the replica holding an approval died. */
export const REPLICA_LOST = 'replica_lost';

export interface DecisionServiceOptions {
  readonly ephemeral: EphemeralStore;
  readonly bus: Bus;
  readonly db: Database;
}

/**
 * Takes decisions on any replica. The decision is written to the shared store first (the
 * waiting replica re-reads it), then announced on the bus to wake that replica at once.
 *
 * Order of checks: unknown or another user's request → 404 (nothing revealed); decision not
 * allowed → 400; edited arguments not matching the tool's JSON Schema → 400 with field errors;
 * already resolved or expired → 409 `approval_closed`; the run holding it is gone (its session
 * waiting mark lapsed, a few seconds after it died) → 409 `approval_orphaned`, and the run is
 * recorded as aborted (`replica_lost`).
 */
export class DecisionService {
  private readonly store: ApprovalStore;
  private readonly sessions: SessionRepository;

  constructor(private readonly options: DecisionServiceOptions) {
    this.store = new ApprovalStore(options.ephemeral);
    this.sessions = new SessionRepository(options.db);
  }

  async submit(
    userId: string,
    requestId: string,
    body: ApprovalDecisionRequest,
  ): Promise<ApprovalDecisionResponse> {
    const record = await this.store.get(requestId);
    if (!record || record.userId !== userId) {
      throw new DecisionError('not_found', `approval ${requestId} not found`);
    }
    if (!record.allowedDecisions.includes(body.decision)) {
      throw new DecisionError('decision_not_allowed', `"${body.decision}" is not allowed here`, {
        allowed_decisions: record.allowedDecisions,
      });
    }
    if (body.decision === 'edit') checkArgs(record, body.tool_args);
    await this.ensureOpen(record);
    const resolution: ApprovalResolution =
      body.decision === 'approve'
        ? { outcome: 'approved' }
        : body.decision === 'edit'
          ? { outcome: 'edited', args: body.tool_args }
          : { outcome: 'rejected', ...(body.message ? { message: body.message } : {}) };
    if (!(await this.store.resolve(record, resolution))) await this.ensureOpen(record);
    await this.options.bus.publish(resolvedChannel(requestId), 1).catch(() => undefined);
    return { request_id: requestId, decision: body.decision, status: 'accepted' };
  }

  private async ensureOpen(record: ApprovalRecord): Promise<void> {
    const existing = await this.store.resolution(record.requestId);
    if (existing) throw closed(existing.outcome);
    if (Date.now() >= record.expiresAt) throw closed('timed_out');
    if (await this.store.isWaiting(record.requestId)) return;
    if (!(await this.store.resolve(record, { outcome: 'orphaned' }))) {
      const raced = await this.store.resolution(record.requestId);
      if (raced?.outcome !== 'orphaned') throw closed(raced?.outcome ?? 'cancelled');
    }
    const run = await this.sessions.findRun(record.runId);
    if (run?.status === 'running')
      await this.sessions.finishRun(record.runId, 'aborted', REPLICA_LOST);
    throw new DecisionError(
      'approval_orphaned',
      'the run waiting for this approval is gone (its server stopped); the call did not run',
      { outcome: 'orphaned', run_id: record.runId },
    );
  }
}

function closed(outcome: string): DecisionError {
  if (outcome === 'orphaned') {
    return new DecisionError('approval_orphaned', 'the run waiting for this approval is gone', {
      outcome,
    });
  }
  return new DecisionError('approval_closed', `the approval is already closed (${outcome})`, {
    outcome,
  });
}

/** Checks edited arguments against the tool's JSON Schema, as the model's would be. */
function checkArgs(record: ApprovalRecord, args: Record<string, unknown>): void {
  let schema: z.ZodType;
  try {
    schema = z.fromJSONSchema(record.parameters as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return; // a schema zod cannot read: the tool validates its arguments itself
  }
  const parsed = schema.safeParse(args);
  if (parsed.success) return;
  const errors: FieldError[] = fieldErrors(parsed.error).map((e) => ({
    ...e,
    path: e.path ? `tool_args.${e.path}` : 'tool_args',
  }));
  throw new DecisionError('invalid_request', `tool_args do not match ${record.toolName}`, errors);
}

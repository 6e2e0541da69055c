import { z } from 'zod';
import { SessionRepository } from '@agent-backend/agent-runtime';
import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import {
  fieldErrors,
  type ApprovalDecisionItem,
  type ApprovalDecisionRequest,
  type ApprovalDecisionResponse,
  type ApprovalDecisionsResponse,
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
  /**
   * Asks for a suspended run to be resumed (a job on the worker role), after a decision on one
   * of its approvals was written; the job resumes it once every held call has an outcome.
   * Absent: decisions on suspended runs are written and wait for their timeout jobs.
   */
  readonly resume?: (runId: string) => Promise<void>;
  /**
   * Runs whose replica died are taken over (`AGENT_TAKEOVER`): a decision on such a run is
   * taken and waits for the new holder instead of answering `approval_orphaned`.
   */
  readonly takeover?: boolean;
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
    const record = checked(userId, requestId, await this.store.get(requestId), body);
    await this.ensureOpen(record);
    if (!(await this.store.resolve(record, resolutionOf(body)))) await this.ensureOpen(record);
    await this.options.bus.publish(resolvedChannel(requestId), 1).catch(() => undefined);
    await this.resumeIfSuspended(record.runId);
    return { request_id: requestId, decision: body.decision, status: 'accepted' };
  }

  /**
   * Decisions on several approvals of one run (`POST /api/agent/runs/:run_id/decisions`), with
   * the checks of {@link submit} for each, all of them before any decision is written: the
   * first refused decision (in the order sent) is the error, its `details` naming it (`index`,
   * `request_id`; field errors under `decisions.<index>.tool_args`), and nothing is taken. An
   * approval of another run counts as unknown (404).
   *
   * Each outcome is still its own `ifAbsent` write, so a timeout landing between the checks and
   * the writes can close one approval while the others are taken: that answers 409
   * `approval_closed` with `details.accepted` listing the request ids that were taken.
   */
  async submitMany(
    userId: string,
    runId: string,
    decisions: readonly ApprovalDecisionItem[],
  ): Promise<ApprovalDecisionsResponse> {
    const found = await Promise.all(decisions.map((d) => this.store.get(d.request_id)));
    const records: ApprovalRecord[] = [];
    for (const [index, decision] of decisions.entries()) {
      const record = found[index] ?? null;
      const ofRun = record?.runId === runId ? record : null;
      const argsPath = `decisions.${index}.tool_args`;
      records.push(
        await inBatch(index, decision.request_id, () =>
          checked(userId, decision.request_id, ofRun, { ...decision, argsPath }),
        ),
      );
    }
    for (const [index, record] of records.entries()) {
      await inBatch(index, record.requestId, () => this.ensureOpen(record));
    }
    const accepted: string[] = [];
    let lost: { index: number; record: ApprovalRecord } | undefined;
    for (const [index, record] of records.entries()) {
      if (await this.store.resolve(record, resolutionOf(decisions[index]!))) {
        accepted.push(record.requestId);
      } else {
        lost ??= { index, record };
      }
    }
    await Promise.all(
      accepted.map((id) => this.options.bus.publish(resolvedChannel(id), 1).catch(() => undefined)),
    );
    if (accepted.length > 0) await this.resumeIfSuspended(runId);
    if (lost) {
      const outcome = (await this.store.resolution(lost.record.requestId))?.outcome ?? 'cancelled';
      throw new DecisionError(
        outcome === 'orphaned' ? 'approval_orphaned' : 'approval_closed',
        `approval ${lost.record.requestId} closed (${outcome}) while the decisions were taken; ` +
          `${accepted.length} of ${decisions.length} were taken`,
        { index: lost.index, request_id: lost.record.requestId, outcome, accepted },
      );
    }
    return {
      run_id: runId,
      decisions: decisions.map((d) => ({
        request_id: d.request_id,
        decision: d.decision,
        status: 'accepted' as const,
      })),
    };
  }

  /** A suspended run waits for a job to resume it; a running one picked the decision up. */
  private async resumeIfSuspended(runId: string): Promise<void> {
    if (!this.options.resume) return;
    const run = await this.sessions.findRun(runId);
    if (run?.status === 'suspended') await this.options.resume(runId);
  }

  private async ensureOpen(record: ApprovalRecord): Promise<void> {
    const existing = await this.store.resolution(record.requestId);
    if (existing) throw closed(existing.outcome);
    if (Date.now() >= record.expiresAt) throw closed('timed_out');
    if (await this.store.isWaiting(record.requestId)) return;
    // A suspended run waits in the store, not on a replica: the decision resumes it.
    const owner = await this.sessions.findRun(record.runId);
    if (owner?.status === 'suspended') return;
    // A running run whose replica died is taken over from its last step, approvals included.
    if (owner?.status === 'running' && this.options.takeover) return;
    if (!(await this.store.resolve(record, { outcome: 'orphaned' }))) {
      const raced = await this.store.resolution(record.requestId);
      if (raced?.outcome !== 'orphaned') throw closed(raced?.outcome ?? 'cancelled');
    }
    if (owner?.status === 'running') {
      await this.sessions.finishRun(record.runId, 'aborted', REPLICA_LOST);
    }
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

/**
 * The checks that need no store write, in the documented order: unknown or another user's
 * approval (404), decision not allowed (400), edited arguments not matching the schema (400).
 */
function checked(
  userId: string,
  requestId: string,
  record: ApprovalRecord | null,
  body: ApprovalDecisionRequest & { argsPath?: string },
): ApprovalRecord {
  if (!record || record.userId !== userId) {
    throw new DecisionError('not_found', `approval ${requestId} not found`);
  }
  if (!record.allowedDecisions.includes(body.decision)) {
    throw new DecisionError('decision_not_allowed', `"${body.decision}" is not allowed here`, {
      allowed_decisions: record.allowedDecisions,
    });
  }
  if (body.decision === 'edit') checkArgs(record, body.tool_args, body.argsPath ?? 'tool_args');
  return record;
}

function resolutionOf(body: ApprovalDecisionRequest): ApprovalResolution {
  switch (body.decision) {
    case 'approve':
      return { outcome: 'approved' };
    case 'edit':
      return { outcome: 'edited', args: body.tool_args };
    default:
      return { outcome: 'rejected', ...(body.message ? { message: body.message } : {}) };
  }
}

/**
 * Runs one entry's check; a refusal names the entry: `index` and `request_id` join object
 * details (field errors already carry the entry in their paths).
 */
async function inBatch<T>(
  index: number,
  requestId: string,
  check: () => T | Promise<T>,
): Promise<T> {
  try {
    return await check();
  } catch (error) {
    if (!(error instanceof DecisionError)) throw error;
    const details = Array.isArray(error.details)
      ? error.details
      : { index, request_id: requestId, ...(error.details as object | undefined) };
    throw new DecisionError(error.code, `decisions[${index}]: ${error.message}`, details);
  }
}

/** Checks edited arguments against the tool's JSON Schema, as the model's would be. */
function checkArgs(record: ApprovalRecord, args: Record<string, unknown>, at: string): void {
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
    path: e.path ? `${at}.${e.path}` : at,
  }));
  throw new DecisionError('invalid_request', `tool_args do not match ${record.toolName}`, errors);
}

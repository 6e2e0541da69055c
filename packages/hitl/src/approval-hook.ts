import { randomUUID } from 'node:crypto';
import type {
  BeforeToolCall,
  PendingToolCall,
  ResumeApproval,
  RunInfo,
  ToolCallDecision,
} from '@agent-backend/agent-runtime';
import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Logger } from '@agent-backend/logger';
import type { HitlMetrics } from '@agent-backend/metrics';
import type { ApprovalOutcome } from '@agent-backend/protocol';
import { ApprovalStore, type ApprovalRecord, type ApprovalResolution } from './approval-store.js';
import { approvalPolicy } from './policy.js';
import { waitForResolution } from './wait-for-resolution.js';

export interface ApprovalHookOptions {
  readonly ephemeral: EphemeralStore;
  readonly bus: Bus;
  readonly logger: Logger;
  /** Re-read interval of a pending approval. @default 1_000 */
  readonly pollMs?: number;
  /** Approvals requested and their outcomes. @default none */
  readonly metrics?: HitlMetrics;
}

/**
 * The agent runner's `beforeToolCall` for HITL (spec 2.5): per run, nothing when the request
 * has no `hitl_config`; otherwise each call the policy interrupts is stored as an approval,
 * announced with `approval_request`, and held until a decision, the timeout or the run's end,
 * announced with `approval_result`. The loop asks about every call of a turn at once, so a
 * turn's held calls are announced together and each waits for its own decision only (in any
 * order, on any replica); with `AGENT_MAX_PARALLEL_TOOLS=1` they are held one after the other.
 * Every call ends with its own tool message, so no id is left dangling.
 *
 * Fails closed: if the approval cannot be stored, the call does not run.
 */
export function createApprovalHook(
  options: ApprovalHookOptions,
): (run: RunInfo) => BeforeToolCall | undefined {
  const store = new ApprovalStore(options.ephemeral);
  return (run) => {
    const config = run.request.hitl;
    if (!config) return undefined;
    return async (call) => {
      const policy = approvalPolicy(config, call.name);
      if (!policy.interrupt) return { action: 'run', args: call.args };
      const now = Date.now();
      const record: ApprovalRecord = {
        requestId: `apr_${randomUUID().replace(/-/g, '')}`,
        userId: run.userId,
        sessionId: run.sessionId,
        runId: run.runId,
        toolCallId: call.id,
        toolName: call.name,
        args: call.args,
        allowedDecisions: [...policy.allowedDecisions],
        parameters: call.tool.parameters,
        createdAt: now,
        expiresAt: now + policy.timeoutMs,
      };
      try {
        await store.create(record);
      } catch (err) {
        options.logger.warn({ err, runId: run.runId }, 'approval could not be stored');
        return { action: 'skip', message: 'The call needs approval, which is unavailable now.' };
      }
      options.metrics?.requested();
      call.context.emit({
        type: 'approval_request',
        request_id: record.requestId,
        tool_call_id: call.id,
        tool_name: call.name,
        tool_args: call.args,
        allowed_decisions: record.allowedDecisions,
        expires_at: new Date(record.expiresAt).toISOString(),
      });
      return settle(options, store, run, call, record);
    };
  };
}

/**
 * The same hook for a call held while its run was suspended, when the run resumes (on any
 * replica or a worker): its outcome if one was written (a decision, the timeout), else it waits
 * again like a fresh approval, and holds again if the run is asked to suspend. An approval whose
 * record is gone (Redis lost it) refuses the call: it fails closed.
 */
export function createResumeApproval(
  options: ApprovalHookOptions,
): (run: RunInfo) => ResumeApproval | undefined {
  const store = new ApprovalStore(options.ephemeral);
  return (run) => async (call) => {
    const record = await store.get(call.requestId).catch(() => null);
    if (!record || record.runId !== run.runId) {
      return {
        action: 'skip',
        message: 'The approval of this call is no longer known; it did not run.',
      };
    }
    return settle(options, store, run, call, record);
  };
}

/** Waits for the approval's outcome and announces it; holds the call when the run suspends. */
async function settle(
  options: ApprovalHookOptions,
  store: ApprovalStore,
  run: RunInfo,
  call: PendingToolCall,
  record: ApprovalRecord,
): Promise<ToolCallDecision> {
  const resolution = await waitForResolution(
    store,
    options.bus,
    record,
    call.context.signal,
    options.pollMs,
    run.suspend,
  );
  if (!resolution) {
    return {
      action: 'hold',
      approval: {
        request_id: record.requestId,
        expires_at: new Date(record.expiresAt).toISOString(),
      },
    };
  }
  const outcome: ApprovalOutcome =
    resolution.outcome === 'orphaned' ? 'cancelled' : resolution.outcome;
  options.metrics?.resolved(outcome);
  const timeoutMs = record.expiresAt - (record.createdAt ?? record.expiresAt - 60_000);
  const decision = toDecision(record, resolution, timeoutMs);
  call.context.emit({
    type: 'approval_result',
    request_id: record.requestId,
    tool_call_id: call.id,
    tool_name: call.name,
    outcome,
    ...(decision.action === 'run' ? { tool_args: decision.args } : {}),
    ...(resolution.message !== undefined ? { message: resolution.message } : {}),
  });
  return decision;
}

/** What the loop does with the outcome; every refusal is a tool message the model reads. */
function toDecision(
  record: ApprovalRecord,
  resolution: ApprovalResolution,
  timeoutMs: number,
): ToolCallDecision {
  switch (resolution.outcome) {
    case 'approved':
      return { action: 'run', args: record.args };
    case 'edited':
      return { action: 'run', args: resolution.args ?? record.args };
    case 'rejected':
      return {
        action: 'skip',
        message:
          `The user rejected this call of ${record.toolName}; it did not run.` +
          (resolution.message ? ` Their note: ${resolution.message}` : ''),
      };
    case 'timed_out':
      return {
        action: 'skip',
        message: `No approval arrived within ${timeoutMs / 1000} s: the call of ${record.toolName} was not approved and did not run.`,
      };
    default:
      return { action: 'skip', message: 'Cancelled: the run stopped while the call waited.' };
  }
}

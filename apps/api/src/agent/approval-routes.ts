import { AppError, type ErrorCode } from '@agent-backend/http-server';
import { DecisionError, DecisionService, type DecisionServiceOptions } from '@agent-backend/hitl';
import {
  ApprovalDecisionParams,
  ApprovalDecisionRequest,
  ApprovalDecisionResponse,
  ApprovalDecisionsParams,
  ApprovalDecisionsRequest,
  ApprovalDecisionsResponse,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/** What deciding answers besides the service-wide errors (docs/hitl.md). */
const DECISION_ERRORS: ErrorCode[] = [
  'not_found',
  'decision_not_allowed',
  'approval_closed',
  'approval_orphaned',
];

/**
 * `POST /api/agent/approvals/:request_id/decision` (HITL; the spec leaves the decision path
 * open, see docs/hitl.md): the user of the access token approves, edits or rejects a held tool
 * call. Any API replica accepts it; the replica holding the stream picks it up from the shared
 * store (woken through the bus), and a suspended run is resumed by a job (`runs.resume`). 200
 * with `ApprovalDecisionResponse` once it is recorded.
 *
 * `POST /api/agent/runs/:run_id/decisions` (beyond the spec): several decisions on held calls
 * of one run in one request, with the same checks for each, all made before any is taken
 * (docs/hitl.md). 200 with `ApprovalDecisionsResponse`.
 */
export function registerApprovalRoutes(
  context: ServiceContext,
  runs: Pick<DecisionServiceOptions, 'resume' | 'takeover'>,
): void {
  const { app, engines, requireUser, limits, audit } = context;
  /** `approval.decided`, once per decision taken, by the replica that took it. */
  const recordDecided = (
    request: Parameters<typeof audit.record>[1] & { userId: string },
    decided: ApprovalDecisionResponse,
    runId?: string,
  ) =>
    audit.record(
      {
        action: 'approval.decided',
        userId: request.userId,
        actor: 'user',
        details: {
          request_id: decided.request_id,
          outcome: decided.decision,
          ...(runId ? { run_id: runId } : {}),
        },
      },
      request,
    );
  const decisions = new DecisionService({
    ephemeral: engines.ephemeral,
    bus: engines.bus,
    db: engines.db,
    ...runs,
  });
  app.post(
    '/api/agent/approvals/:request_id/decision',
    {
      body: ApprovalDecisionRequest,
      params: ApprovalDecisionParams,
      preHandler: requireUser,
      limit: limits.rate('decisions'),
      doc: {
        tag: 'agent',
        summary: 'Decide on a tool call held for approval',
        description:
          'Approves, edits (the arguments are checked against the tool) or rejects the call of an ' +
          '`approval_request` event, on any API replica. See docs/hitl.md.',
        responses: {
          200: { description: 'The decision is taken.', json: ApprovalDecisionResponse },
        },
        errors: DECISION_ERRORS,
      },
    },
    async (request) => {
      const { request_id: requestId } = request.params;
      try {
        const decided = await decisions.submit(request.userId, requestId, request.body);
        await recordDecided(request, decided);
        return decided;
      } catch (error) {
        if (error instanceof DecisionError) {
          throw new AppError(error.code, error.message, error.details);
        }
        throw error;
      }
    },
  );
  const batch = {
    body: ApprovalDecisionsRequest,
    params: ApprovalDecisionsParams,
    preHandler: requireUser,
    limit: limits.rate('decisions'),
    doc: {
      tag: 'agent',
      summary: 'Decide on several held calls of one run at once',
      description:
        'All or nothing: every decision is checked before any is taken; the first refusal, in ' +
        'the order sent, is the answer, its `details` naming the entry (`index`, `request_id`).',
      responses: {
        200: {
          description: 'Every decision is taken, in the order sent.',
          json: ApprovalDecisionsResponse,
        },
      },
      errors: DECISION_ERRORS,
    },
  };
  app.post('/api/agent/runs/:run_id/decisions', batch, async (request) => {
    const { run_id: runId } = request.params;
    try {
      const decided = await decisions.submitMany(request.userId, runId, request.body.decisions);
      for (const one of decided.decisions) await recordDecided(request, one, runId);
      return decided;
    } catch (error) {
      if (error instanceof DecisionError) {
        throw new AppError(error.code, error.message, error.details);
      }
      throw error;
    }
  });
}

import { AppError } from '@agent-backend/http-server';
import { DecisionError, DecisionService } from '@agent-backend/hitl';
import {
  ApprovalDecisionParams,
  ApprovalDecisionRequest,
  ApprovalDecisionsParams,
  ApprovalDecisionsRequest,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `POST /api/agent/approvals/:request_id/decision` (HITL; the spec leaves the decision path
 * open, see docs/hitl.md): the user of the access token approves, edits or rejects a held tool
 * call. Any API replica accepts it; the replica holding the stream picks it up from the shared
 * store (woken through the bus). 200 with `ApprovalDecisionResponse` once it is recorded.
 *
 * `POST /api/agent/runs/:run_id/decisions` (beyond the spec): several decisions on held calls
 * of one run in one request, with the same checks for each, all made before any is taken
 * (docs/hitl.md). 200 with `ApprovalDecisionsResponse`.
 */
export function registerApprovalRoutes(context: ServiceContext): void {
  const { app, engines, requireUser } = context;
  const decisions = new DecisionService({
    ephemeral: engines.ephemeral,
    bus: engines.bus,
    db: engines.db,
  });
  app.post(
    '/api/agent/approvals/:request_id/decision',
    { body: ApprovalDecisionRequest, params: ApprovalDecisionParams, preHandler: requireUser },
    async (request) => {
      const { request_id: requestId } = request.params;
      try {
        return await decisions.submit(request.userId, requestId, request.body);
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
  };
  app.post('/api/agent/runs/:run_id/decisions', batch, async (request) => {
    const { run_id: runId } = request.params;
    try {
      return await decisions.submitMany(request.userId, runId, request.body.decisions);
    } catch (error) {
      if (error instanceof DecisionError) {
        throw new AppError(error.code, error.message, error.details);
      }
      throw error;
    }
  });
}

import type { ConversationRepository, UsageRepository } from '@agent-backend/agent-runtime';
import { AppError } from '@agent-backend/http-server';
import { DISCONNECT_USER_CHANNEL } from '@agent-backend/node-rpc';
import {
  AgentRun,
  AuditEventList,
  OperatorAuditQuery,
  OperatorDisconnectResponse,
  OperatorRunParams,
  OperatorUser,
  OperatorUserParams,
  RevokeAllResponse,
  type DisconnectUserMessage,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import type { RunStopper } from '@agent-backend/agent';
import { auditPage } from '../audit-routes.js';
import { revokeUserTokens } from '../token-routes.js';
import { createOperatorRouter, type OperatorRouter } from './operator-router.js';
import { lookUpUser } from './user-lookup.js';

/** What the operator routes act through: the agent routes' repositories and run stopper. */
export interface OperatorServices {
  readonly conversations: ConversationRepository;
  readonly usage: UsageRepository;
  readonly runs: RunStopper;
}

/**
 * The operator API (docs/operations.md, "Operator API"): look up a user, disconnect their
 * sockets on every gateway, cancel one of their runs, revoke their tokens, read the audit log.
 * Returns the router, for further operator routes.
 */
export function registerOperatorRoutes(
  context: ServiceContext,
  services: OperatorServices,
): OperatorRouter {
  const router = createOperatorRouter(context);
  const revokeAll = revokeUserTokens(context);

  router.get(
    '/api/operator/users/:user_id',
    {
      params: OperatorUserParams,
      doc: {
        tag: 'operator',
        summary: 'Look up a user',
        description:
          'Their sessions (count, and the latest 20 by activity), runs (count, and those ' +
          'running), nodes online on any gateway replica, token usage of the last 30 days, ' +
          'limits, and tokens (live refresh tokens, the revocation cutoff). A user the service ' +
          'has nothing of answers with zeros, not 404.',
        responses: { 200: { description: 'The user.', json: OperatorUser } },
      },
    },
    async (request) =>
      (await lookUpUser(context, services, request.params.user_id)) satisfies OperatorUser,
  );

  router.post(
    '/api/operator/users/:user_id/disconnect',
    {
      params: OperatorUserParams,
      doc: {
        tag: 'operator',
        summary: "Close a user's sockets on every gateway",
        description:
          "Every gateway replica closes the user's WebSocket connections (nodes and web " +
          'clients) with 4010; clients reconnect after a backoff unless their tokens are ' +
          'revoked too. `gateways_reached` counts the gateway processes that got the order.',
        responses: {
          200: { description: 'The order went out.', json: OperatorDisconnectResponse },
        },
      },
    },
    async (request) => {
      const { user_id } = request.params;
      const message: DisconnectUserMessage = { user_id };
      const reached = await context.engines.bus.publish(DISCONNECT_USER_CHANNEL, message);
      return { user_id, gateways_reached: reached } satisfies OperatorDisconnectResponse;
    },
  );

  router.post(
    '/api/operator/users/:user_id/runs/:run_id/cancel',
    {
      params: OperatorRunParams,
      doc: {
        tag: 'operator',
        summary: "Cancel a user's run, from any replica",
        description:
          'What `POST /api/agent/runs/:run_id/cancel` does for the user: the replica running ' +
          'the run stops it (`run_aborted`); answers once it is recorded as ended (at most 5 s).',
        responses: { 200: { description: 'The run after the cancel.', json: AgentRun } },
        errors: ['not_found'],
      },
    },
    async (request) => {
      const { user_id, run_id } = request.params;
      const run = await services.runs.stop(user_id, run_id);
      if (!run) throw new AppError('not_found', `run ${run_id} of user ${user_id} not found`);
      return run satisfies AgentRun;
    },
  );

  router.post(
    '/api/operator/users/:user_id/revoke-tokens',
    {
      params: OperatorUserParams,
      doc: {
        tag: 'operator',
        summary: "Revoke all of a user's tokens",
        description:
          'What `pnpm token:revoke` does: every refresh token of the user is revoked, every ' +
          'access token issued until now is refused within 5 s on every replica, and open ' +
          'WebSocket connections are closed with 4401.',
        responses: { 200: { description: 'Revoked.', json: RevokeAllResponse } },
      },
    },
    async (request) =>
      (await revokeAll(request.params.user_id, 'operator', request)) satisfies RevokeAllResponse,
  );

  router.get(
    '/api/operator/audit',
    {
      query: OperatorAuditQuery,
      doc: {
        tag: 'operator',
        summary: 'Read the audit log, newest first',
        description:
          "Every user's security events, or one user's (`user_id`), one action's (`action`), a " +
          'page at a time (`next_cursor`).',
        responses: { 200: { description: 'One page.', json: AuditEventList } },
      },
    },
    async (request) => (await auditPage(context, request.query)) satisfies AuditEventList,
  );
  return router;
}

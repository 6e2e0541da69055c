import { z } from 'zod';
import { AgentRun, SessionSummary, UsageReport } from './conversations.js';
import { NodeInfo } from './nodes.js';

/*
 * The operator API (docs/operations.md): behind `ADMIN_TOKEN`, never a user's token.
 */

/** Path of the operator's user routes: any user id a token may carry. */
export const OperatorUserParams = z.object({ user_id: z.string().min(1).max(128) });
export type OperatorUserParams = z.infer<typeof OperatorUserParams>;

/** Path of `POST /api/operator/users/:user_id/runs/:run_id/cancel`. */
export const OperatorRunParams = OperatorUserParams.extend({ run_id: z.string().min(1).max(200) });
export type OperatorRunParams = z.infer<typeof OperatorRunParams>;

/** 200 answer of `GET /api/operator/users/:user_id`: what the service holds of a user now. */
export const OperatorUser = z.object({
  user_id: z.string(),
  sessions: z.object({
    /** Every session of the user, the service's own (chats, tasks) included. */
    count: z.number().int().nonnegative(),
    /** The latest sessions by activity, at most 20 (the conversations API's list items). */
    recent: z.array(SessionSummary),
  }),
  runs: z.object({
    total: z.number().int().nonnegative(),
    /** Runs recorded as `running` now. */
    running: z.array(AgentRun),
  }),
  /** The user's nodes in shared presence, on any gateway replica. */
  nodes_online: z.array(NodeInfo),
  /** Token usage of the last 30 days, as `GET /api/usage` reports it. */
  usage: UsageReport,
  limits: z.object({
    /** `MAX_CONCURRENT_RUNS_PER_USER`. */
    max_concurrent_runs: z.number().int().nonnegative(),
    /** Per-minute request limits by class (`RATE_LIMIT_*`). */
    rate_per_minute: z.record(z.string(), z.number().int().nonnegative()),
  }),
  tokens: z.object({
    /** Refresh tokens neither revoked nor expired. */
    live_refresh_tokens: z.number().int().nonnegative(),
    /** Access tokens issued at or before this are refused (revoked); null: none. */
    revoked_before: z.string().nullable(),
  }),
});
export type OperatorUser = z.infer<typeof OperatorUser>;

/** 200 answer of `POST /api/operator/users/:user_id/disconnect`. */
export const OperatorDisconnectResponse = z.object({
  user_id: z.string(),
  /** Gateway processes that received the order (each closes the user's sockets it holds). */
  gateways_reached: z.number().int().nonnegative(),
});
export type OperatorDisconnectResponse = z.infer<typeof OperatorDisconnectResponse>;

/** What the bus carries to every gateway for a disconnect. */
export const DisconnectUserMessage = z.object({ user_id: z.string().min(1) });
export type DisconnectUserMessage = z.infer<typeof DisconnectUserMessage>;

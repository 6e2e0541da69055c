import { z } from 'zod';
import { ApprovalOutcome, TodoItem, TokenUsage } from './agent-events.js';
import { ConversationMode } from './invoke.js';
import { queryInteger } from './query-integer.js';

/*
 * The conversations API: a user's sessions, their stored messages, their runs and token usage.
 * Field names are those of the SSE events (`tool_name`, `tool_args`, `tool_call_id`, `result`,
 * `outcome`), so a client renders history and a live run with one code path.
 */

/** Most characters of a session title. */
export const MAX_SESSION_TITLE_CHARS = 200;

const blankIsAbsent = (keys: readonly string[]) => (value: unknown) => {
  if (typeof value !== 'object' || value === null) return value;
  const out = { ...(value as Record<string, unknown>) };
  for (const key of keys)
    if (typeof out[key] === 'string' && out[key].trim() === '') delete out[key];
  return out;
};

/**
 * Query of `GET /api/agent/sessions`: newest activity first; `q` keeps the sessions whose title
 * contains it (case-insensitive; blank means no filter); `cursor` is the previous `next_cursor`.
 */
export const ListSessionsQuery = z.preprocess(
  blankIsAbsent(['q']),
  z.object({
    q: z.string().trim().max(200).optional(),
    cursor: z.string().min(1).max(500).optional(),
    /** @default 20 */
    limit: queryInteger(1, 100).default(20),
  }),
);
export type ListSessionsQuery = z.infer<typeof ListSessionsQuery>;

/** One session of `GET /api/agent/sessions`. Times are ISO 8601. */
export const SessionSummary = z.object({
  session_id: z.string(),
  /** Given with `PATCH`, else the start of the first user message; null before any. */
  title: z.string().nullable(),
  created_at: z.string(),
  /** The last activity: a run started or a message stored. The list's order. */
  updated_at: z.string(),
  /** Stored messages: user, assistant and tool, as `GET .../messages` lists them. */
  message_count: z.number().int().nonnegative(),
  /** The start of the last user or assistant text; null before any. */
  last_message_preview: z.string().nullable(),
  /** The run still going, if any (cancel it with `POST /api/agent/runs/:run_id/cancel`). */
  active_run_id: z.string().nullable(),
});
export type SessionSummary = z.infer<typeof SessionSummary>;

/** 200 answer of `GET /api/agent/sessions`; `next_cursor` is null on the last page. */
export const SessionList = z.object({
  sessions: z.array(SessionSummary),
  next_cursor: z.string().nullable(),
});
export type SessionList = z.infer<typeof SessionList>;

/** 200 answer of `GET /api/agent/sessions/:session_id`. */
export const SessionDetail = SessionSummary.extend({
  /** The agent's todo list, as the last `todos` event sent it. */
  todos: z.array(TodoItem),
  /** A plan of `plan` mode waiting for the user (the next `agent` run accepts it). */
  pending_plan: z.object({ summary: z.string(), steps: z.array(z.string()) }).nullable(),
  /** What the last run used; null before any run. */
  settings: z.object({ mode: ConversationMode, model: z.string().nullable() }).nullable(),
});
export type SessionDetail = z.infer<typeof SessionDetail>;

/** Path of the session routes: a session id as invoke takes it. */
export const SessionParams = z.object({ session_id: z.string().min(1) });
export type SessionParams = z.infer<typeof SessionParams>;

/** Body of `PATCH /api/agent/sessions/:session_id`. */
export const UpdateSessionRequest = z.strictObject({
  title: z.string().trim().min(1).max(MAX_SESSION_TITLE_CHARS),
});
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequest>;

/** Query of `GET /api/agent/sessions/:session_id/messages`: oldest first, a page at a time. */
export const ListMessagesQuery = z.object({
  cursor: z.string().min(1).max(100).optional(),
  /** @default 50 */
  limit: queryInteger(1, 200).default(50),
});
export type ListMessagesQuery = z.infer<typeof ListMessagesQuery>;

/** A tool call of an assistant message, named as in the `tool_call` event. */
export const StoredToolCall = z.object({
  tool_call_id: z.string(),
  tool_name: z.string(),
  tool_args: z.record(z.string(), z.unknown()),
});
export type StoredToolCall = z.infer<typeof StoredToolCall>;

/** How an approval of a tool call ended, named as in the `approval_result` event. */
export const StoredApproval = z.object({
  request_id: z.string(),
  outcome: ApprovalOutcome,
  tool_args: z.record(z.string(), z.unknown()).optional(),
  message: z.string().optional(),
});
export type StoredApproval = z.infer<typeof StoredApproval>;

const messageBase = {
  /** Position in the conversation, from 1. */
  seq: z.number().int().positive(),
  /** The run that stored it. */
  run_id: z.string(),
  created_at: z.string(),
};

/**
 * One stored message: the user's text, the assistant's text (`content`, the concatenated
 * `message_chunk`s) with its tool calls, or a tool's result with the approval that preceded it.
 */
export const StoredMessage = z.discriminatedUnion('role', [
  z.object({ ...messageBase, role: z.literal('user'), content: z.string() }),
  z.object({
    ...messageBase,
    role: z.literal('assistant'),
    content: z.string().nullable(),
    tool_calls: z.array(StoredToolCall),
  }),
  z.object({
    ...messageBase,
    role: z.literal('tool'),
    tool_call_id: z.string(),
    /** Null when the call is not in the stored conversation (history sent by a client). */
    tool_name: z.string().nullable(),
    result: z.string(),
    approval: StoredApproval.optional(),
  }),
]);
export type StoredMessage = z.infer<typeof StoredMessage>;

/** 200 answer of `GET /api/agent/sessions/:session_id/messages`. */
export const MessageList = z.object({
  messages: z.array(StoredMessage),
  next_cursor: z.string().nullable(),
});
export type MessageList = z.infer<typeof MessageList>;

/** Path of the run routes. */
export const RunParams = z.object({ run_id: z.string().min(1).max(200) });
export type RunParams = z.infer<typeof RunParams>;

/**
 * How a run ended (`running` while it goes on; `suspended` while it waits for approvals with no
 * server holding it), as stored.
 */
export const RunStatus = z.enum(['running', 'suspended', 'done', 'error', 'aborted']);
export type RunStatus = z.infer<typeof RunStatus>;

/** 200 answer of `GET /api/agent/runs/:run_id` and of cancelling one. Times are ISO 8601. */
export const AgentRun = z.object({
  run_id: z.string(),
  session_id: z.string(),
  status: RunStatus,
  started_at: z.string(),
  ended_at: z.string().nullable(),
  /** The code of the run's `error` event (`run_aborted` after a cancel); null otherwise. */
  error: z.object({ code: z.string() }).nullable(),
  usage: TokenUsage,
});
export type AgentRun = z.infer<typeof AgentRun>;

const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date: YYYY-MM-DD');

/** Query of `GET /api/usage`: UTC days, both included; by default the last 30 days. */
export const UsageQuery = z.object({ from: isoDate.optional(), to: isoDate.optional() });
export type UsageQuery = z.infer<typeof UsageQuery>;

/** One UTC day of the caller's runs (by the day each run started). */
export const UsageDay = TokenUsage.extend({
  date: z.string(),
  runs: z.number().int().nonnegative(),
});
export type UsageDay = z.infer<typeof UsageDay>;

/**
 * Where the caller stands against the daily token budget (`TOKEN_BUDGET_PER_USER_PER_DAY`):
 * today's tokens, counted as each model request reports them (a running run's included).
 */
export const TokenBudgetStatus = z.object({
  /** The UTC day counted. */
  day: z.string(),
  /** Tokens (prompt plus completion) a day. */
  limit: z.number().int().positive(),
  used: z.number().int().nonnegative(),
  /** `limit - used`, at least 0; at 0 an invoke gets 429 `budget_exceeded`. */
  remaining: z.number().int().nonnegative(),
  /** When the day ends and the budget is whole again (ISO 8601). */
  resets_at: z.string(),
});
export type TokenBudgetStatus = z.infer<typeof TokenBudgetStatus>;

/** 200 answer of `GET /api/usage`: the days with runs, oldest first, and their sum. */
export const UsageReport = z.object({
  from: z.string(),
  to: z.string(),
  days: z.array(UsageDay),
  total: TokenUsage.extend({ runs: z.number().int().nonnegative() }),
  /**
   * The daily token budget: null when there is none (or it cannot be read right now). Absent
   * from servers older than budgets.
   */
  budget: TokenBudgetStatus.nullable().optional(),
});
export type UsageReport = z.infer<typeof UsageReport>;

import { z } from 'zod';
import { boundedJson } from './json-bounds.js';
import { HitlDecision } from './invoke.js';

/*
 * Events of the agent SSE stream (spec 6.1). Each is sent as one `data: <JSON>` line, preceded
 * by an `id: <run_id>:<seq>` line (see `AgentStreamEventId`) so a dropped stream can be resumed.
 *
 * To add an event type, define its schema here and add it to `AgentEvent`; clients that do not
 * know a type are expected to ignore it, so adding one is not a breaking change.
 */

/**
 * The first event of every run (not in the spec): announces the session, generated when the
 * request named none, before anything slow happens, so a client that loses the connection
 * early still knows what to resume.
 */
export const SessionEvent = z.object({
  type: z.literal('session'),
  session_id: z.string().min(1),
  run_id: z.string().min(1),
});
export type SessionEvent = z.infer<typeof SessionEvent>;

/** A piece of the answer text; concatenating all chunks of a run gives the answer. */
export const MessageChunkEvent = z.object({
  type: z.literal('message_chunk'),
  content: z.string(),
});
export type MessageChunkEvent = z.infer<typeof MessageChunkEvent>;

/**
 * The model called a tool; `tool_args` are the arguments it chose. `tool_call_id` (not in the
 * spec) pairs it with its `tool_result` when one turn calls several tools.
 */
export const ToolCallEvent = z.object({
  type: z.literal('tool_call'),
  tool_name: z.string(),
  tool_args: z.record(z.string(), z.unknown()),
  tool_call_id: z.string().optional(),
});
export type ToolCallEvent = z.infer<typeof ToolCallEvent>;

/**
 * What a tool returned, as text. `tool_call_id` and `is_error` are not in the spec: the first
 * pairs it with its `tool_call`, the second is true when the tool failed, was refused (mode,
 * approval) or got invalid arguments; `result` then says why.
 */
export const ToolResultEvent = z.object({
  type: z.literal('tool_result'),
  tool_name: z.string(),
  result: z.string(),
  tool_call_id: z.string().optional(),
  is_error: z.boolean().optional(),
  /**
   * Beyond the spec: images the tool returned (a device screenshot, an MCP image), base64, so
   * the client can show them; `result` stays the text the model read.
   */
  images: z.array(z.object({ data: z.string(), mimeType: z.string() })).optional(),
});
export type ToolResultEvent = z.infer<typeof ToolResultEvent>;

/** State of one entry of the agent's todo list (the planning tool). */
export const TodoStatus = z.enum(['pending', 'in_progress', 'completed']);
export type TodoStatus = z.infer<typeof TodoStatus>;

/** One entry of the agent's todo list. */
export const TodoItem = z.object({
  content: z.string().min(1),
  /** @default 'pending' */
  status: TodoStatus.default('pending'),
});
export type TodoItem = z.infer<typeof TodoItem>;

/**
 * The agent's todo list changed (automatic planning, not in the spec): the whole list as it is
 * now, so a client can render it without keeping state.
 */
export const TodosEvent = z.object({
  type: z.literal('todos'),
  todos: z.array(TodoItem),
});
export type TodosEvent = z.infer<typeof TodosEvent>;

/**
 * A plan of the `plan` mode (not in the spec). `proposed`: the agent proposes it and the run
 * ends, waiting for the user; `accepted`: the next `agent`-mode invoke on the session accepted
 * it and the run now carries it out (its steps become the todo list).
 */
export const PlanEvent = z.object({
  type: z.literal('plan'),
  status: z.enum(['proposed', 'accepted']),
  summary: z.string(),
  steps: z.array(z.string().min(1)).min(1),
});
export type PlanEvent = z.infer<typeof PlanEvent>;

/**
 * A tool call is held for human approval (HITL, spec 2.5; the spec leaves the event open). The
 * stream stays open; the call runs, runs edited or is refused once a decision is posted to
 * `POST /api/agent/approvals/:request_id/decision` (any API replica) or `expires_at` passes.
 */
export const ApprovalRequestEvent = z.object({
  type: z.literal('approval_request'),
  /** Names the approval in the decision endpoint; unique across the service. */
  request_id: z.string().min(1),
  tool_call_id: z.string(),
  tool_name: z.string(),
  tool_args: z.record(z.string(), z.unknown()),
  allowed_decisions: z.array(HitlDecision).min(1),
  /** ISO 8601: after it the call counts as rejected (`outcome: 'timed_out'`). */
  expires_at: z.string(),
});
export type ApprovalRequestEvent = z.infer<typeof ApprovalRequestEvent>;

/** How an approval ended: a decision, the timeout, or the run stopping while it waited. */
export const ApprovalOutcome = z.enum(['approved', 'edited', 'rejected', 'timed_out', 'cancelled']);
export type ApprovalOutcome = z.infer<typeof ApprovalOutcome>;

/**
 * The outcome of an {@link ApprovalRequestEvent}, sent before the call's `tool_result`.
 * `tool_args` are the arguments that run (the edited ones after `edited`); `message` is the
 * rejecting user's note, also given to the model.
 */
export const ApprovalResultEvent = z.object({
  type: z.literal('approval_result'),
  request_id: z.string().min(1),
  tool_call_id: z.string(),
  tool_name: z.string(),
  outcome: ApprovalOutcome,
  tool_args: z.record(z.string(), z.unknown()).optional(),
  message: z.string().optional(),
});
export type ApprovalResultEvent = z.infer<typeof ApprovalResultEvent>;

/** Why a skill is active in a run: asked for by name, matched to the message, or loaded by the model. */
export const SkillActivationReason = z.enum(['explicit', 'matched', 'loaded']);
export type SkillActivationReason = z.infer<typeof SkillActivationReason>;

/** A skill active in a run; `score` is the match score (BM25) of a `matched` skill. */
export const ActivatedSkill = z.object({
  name: z.string().min(1),
  reason: SkillActivationReason,
  score: z.number().optional(),
});
export type ActivatedSkill = z.infer<typeof ActivatedSkill>;

/**
 * The skills of a run (spec 2.4; the event is not in the spec), sent right after `session` when
 * the request has `skills`, and again, whole, each time the model loads one with `load_skill`.
 * `missing`: names in `skill_names` that are not in the user's catalog (the run goes on);
 * `over_limit` (beyond the issue's shape, only when non-empty): names in `skill_names` past
 * `max_skills`, not activated.
 */
export const SkillsEvent = z.object({
  type: z.literal('skills'),
  activated: z.array(ActivatedSkill),
  missing: z.array(z.string()),
  over_limit: z.array(z.string()).optional(),
});
export type SkillsEvent = z.infer<typeof SkillsEvent>;

/**
 * Something the user should know about the run that is not an error: a capability asked for but
 * not available (no sandbox provider configured, no web search provider), and why. Not in the
 * spec. `code` is stable (`sandbox_unavailable`, `sandbox_files_missing`, `web_search_unavailable`,
 * `tools_limited`, `answer_restarted`); the run goes on.
 */
export const NoticeEvent = z.object({
  type: z.literal('notice'),
  code: z.string().min(1),
  message: z.string(),
});
export type NoticeEvent = z.infer<typeof NoticeEvent>;

/**
 * The service refreshed a connected account's access token (spec 2.3 `oauth` tools; the event
 * is not in the spec): the client should store the new pair, since a rotating refresh token it
 * sent is no longer valid. The only event that carries a token. `expires_at` is in the unit the
 * request's `expires_at` used (seconds, or milliseconds), absent when the provider gave none.
 */
export const CredentialsRefreshedEvent = z.object({
  type: z.literal('credentials_refreshed'),
  name: z.string().min(1),
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_at: z.number().optional(),
});
export type CredentialsRefreshedEvent = z.infer<typeof CredentialsRefreshedEvent>;

/** Tokens the model provider reported, summed over the model requests of a run (or a day). */
export const TokenUsage = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/**
 * The run finished; `session_id` continues the conversation (generated when none was sent).
 * `usage` (not in the spec): the tokens the provider reported for the run's model requests
 * (zero when it reports none); optional for streams of runs before it was added.
 */
export const DoneEvent = z.object({
  type: z.literal('done'),
  session_id: z.string(),
  usage: TokenUsage.optional(),
});
export type DoneEvent = z.infer<typeof DoneEvent>;

/**
 * The run failed after the stream had started, so an HTTP status can no longer say so. Not in
 * the spec. It is the last event: the service closes the stream after it, without `done`.
 */
export const ErrorEvent = z.object({
  type: z.literal('error'),
  code: z.string().min(1),
  message: z.string(),
});
export type ErrorEvent = z.infer<typeof ErrorEvent>;

/** An approval a suspended run waits for (see {@link SuspendedEvent}). */
export const SuspendedApproval = z.object({
  request_id: z.string().min(1),
  tool_call_id: z.string(),
  tool_name: z.string(),
  /** ISO 8601: the approval's timeout, as in its `approval_request`. */
  expires_at: z.string(),
});
export type SuspendedApproval = z.infer<typeof SuspendedApproval>;

/**
 * The run waits for decisions on `approvals` and no server holds it any more (not in the spec):
 * it is stored, and this stream ends here. A decision posted later (to any API replica) resumes
 * it; its events then continue in `GET /api/agent/runs/:run_id/stream` after this event's id.
 * Sent to a listening client only when the operator set `AGENT_SUSPEND_AFTER_MS`; a run whose
 * client left, a background run and a run on a draining replica suspend in any case.
 */
export const SuspendedEvent = z.object({
  type: z.literal('suspended'),
  run_id: z.string().min(1),
  approvals: z.array(SuspendedApproval),
});
export type SuspendedEvent = z.infer<typeof SuspendedEvent>;

/** Any event of the agent stream, selected by `type`. */
export const AgentEvent = z.discriminatedUnion('type', [
  SessionEvent,
  MessageChunkEvent,
  ToolCallEvent,
  ToolResultEvent,
  TodosEvent,
  PlanEvent,
  ApprovalRequestEvent,
  ApprovalResultEvent,
  SkillsEvent,
  NoticeEvent,
  CredentialsRefreshedEvent,
  SuspendedEvent,
  DoneEvent,
  ErrorEvent,
]);
export type AgentEvent = z.infer<typeof AgentEvent>;
export type AgentEventType = AgentEvent['type'];

/**
 * The SSE `id:` of an agent event, echoed by a reconnecting client as `Last-Event-ID`:
 * `<run_id>:<seq>`, where `seq` counts the run's events from 1. It names the run, so a resume
 * on any API replica knows where to continue without server-side connection state.
 */
export const AgentStreamEventId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}:[1-9][0-9]{0,8}$/, 'must be "<run_id>:<seq>"');
export type AgentStreamEventId = z.infer<typeof AgentStreamEventId>;

/** Splits a valid {@link AgentStreamEventId}; `null` when `value` is not one. */
export function parseAgentStreamEventId(value: string): { runId: string; seq: number } | null {
  if (!AgentStreamEventId.safeParse(value).success) return null;
  const at = value.lastIndexOf(':');
  return { runId: value.slice(0, at), seq: Number(value.slice(at + 1)) };
}

/** Formats the SSE `id:` of a run's `seq`-th event (see {@link AgentStreamEventId}). */
export function formatAgentStreamEventId(runId: string, seq: number): string {
  return `${runId}:${seq}`;
}

/** Path parameters of `GET /api/agent/sessions/:session_id/stream` (resume a run's stream). */
export const ResumeStreamParams = z.object({
  session_id: z.string().min(1),
});
export type ResumeStreamParams = z.infer<typeof ResumeStreamParams>;

/** Path parameters of `POST /api/agent/approvals/:request_id/decision`. */
export const ApprovalDecisionParams = z.object({
  request_id: z.string().min(1).max(200),
});
export type ApprovalDecisionParams = z.infer<typeof ApprovalDecisionParams>;

/** Arguments an `edit` decision puts in place of the model's: at most 256 KiB as JSON, 64 levels. */
const EditedToolArgs = boundedJson(z.record(z.string(), z.unknown()), {
  maxChars: 256 * 1024,
  maxDepth: 64,
});

/**
 * Body of `POST /api/agent/approvals/:request_id/decision` (HITL; the spec leaves the decision
 * path open). `edit` replaces the arguments whole; they are checked against the tool's schema.
 */
export const ApprovalDecisionRequest = z.discriminatedUnion('decision', [
  z.object({ decision: z.literal('approve') }),
  z.object({ decision: z.literal('edit'), tool_args: EditedToolArgs }),
  z.object({ decision: z.literal('reject'), message: z.string().max(2_000).optional() }),
]);
export type ApprovalDecisionRequest = z.infer<typeof ApprovalDecisionRequest>;

/** Answer of an accepted decision: the run holding the stream has it (or will re-read it). */
export const ApprovalDecisionResponse = z.object({
  request_id: z.string(),
  decision: HitlDecision,
  status: z.literal('accepted'),
});
export type ApprovalDecisionResponse = z.infer<typeof ApprovalDecisionResponse>;

/** Path parameters of `POST /api/agent/runs/:run_id/decisions`. */
export const ApprovalDecisionsParams = z.object({
  run_id: z.string().min(1).max(200),
});
export type ApprovalDecisionsParams = z.infer<typeof ApprovalDecisionsParams>;

const DecisionRequestId = z.string().min(1).max(200);

/** One decision of a batch: an {@link ApprovalDecisionRequest} naming its approval. */
export const ApprovalDecisionItem = z.discriminatedUnion('decision', [
  z.object({ request_id: DecisionRequestId, decision: z.literal('approve') }),
  z.object({
    request_id: DecisionRequestId,
    decision: z.literal('edit'),
    tool_args: EditedToolArgs,
  }),
  z.object({
    request_id: DecisionRequestId,
    decision: z.literal('reject'),
    message: z.string().max(2_000).optional(),
  }),
]);
export type ApprovalDecisionItem = z.infer<typeof ApprovalDecisionItem>;

/** Most decisions one batch may carry (a turn's calls; models rarely make more than a dozen). */
export const MAX_BATCH_DECISIONS = 100;

/**
 * Body of `POST /api/agent/runs/:run_id/decisions` (beyond the spec): decisions on several
 * held calls of one run at once, each request id at most once. Validated whole: when one
 * decision is refused, none is taken.
 */
export const ApprovalDecisionsRequest = z.object({
  decisions: z
    .array(ApprovalDecisionItem)
    .min(1)
    .max(MAX_BATCH_DECISIONS)
    .superRefine((decisions, ctx) => {
      const seen = new Set<string>();
      decisions.forEach((item, index) => {
        if (seen.has(item.request_id)) {
          ctx.addIssue({
            code: 'custom',
            message: `request ${item.request_id} appears more than once`,
            path: [index, 'request_id'],
          });
        }
        seen.add(item.request_id);
      });
    }),
});
export type ApprovalDecisionsRequest = z.infer<typeof ApprovalDecisionsRequest>;

/** Answer of an accepted batch: one entry per decision, in the order they were sent. */
export const ApprovalDecisionsResponse = z.object({
  run_id: z.string(),
  decisions: z.array(ApprovalDecisionResponse),
});
export type ApprovalDecisionsResponse = z.infer<typeof ApprovalDecisionsResponse>;

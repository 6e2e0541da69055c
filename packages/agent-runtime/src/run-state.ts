import { z } from 'zod';
import { TokenUsage } from '@agent-backend/protocol';
import { ChatMessage } from './chat-message.js';

/** The approval a call is held for: its request id and when it times out (ISO 8601). */
export const HeldApproval = z.object({ request_id: z.string(), expires_at: z.string() });
export type HeldApproval = z.infer<typeof HeldApproval>;

/** A tool call of the pending turn that completed: its tool message content. */
export const SettledCall = z.object({ content: z.string(), isError: z.boolean().optional() });
export type SettledCall = z.infer<typeof SettledCall>;

/**
 * A model turn whose tool calls are not all answered yet: the assistant message (with its
 * `tool_calls`), the calls that completed, the calls held for approval (by tool call id, the
 * approval's request id), and the calls that had not started (no `tool_call` event went out
 * for them: the turn's calls ran one after the other and its holder died first). Stored when a
 * run suspends; rebuilt from the run log (and the turn record) on a takeover.
 */
export const PendingTurn = z.object({
  assistant: ChatMessage,
  settled: z.record(z.string(), SettledCall).default({}),
  approvals: z.record(z.string(), HeldApproval).default({}),
  unstarted: z.array(z.string()).optional(),
});
export type PendingTurn = z.infer<typeof PendingTurn>;

/**
 * Where a run is (`agent_runs.state`), written with each step's messages in the same statement:
 * model requests made, events sent (the last `seq` of its stream), tokens so far, and, while it
 * is suspended, the turn waiting for decisions. A run resumed on another replica or a worker
 * continues from here: its stream's next event is `lastSeq + 1`, its next model request
 * `step + 1`.
 */
export const RunState = z.object({
  step: z.number().int().nonnegative().default(0),
  lastSeq: z.number().int().nonnegative().default(0),
  usage: TokenUsage.default({ prompt_tokens: 0, completion_tokens: 0 }),
  pendingTurn: PendingTurn.optional(),
  /**
   * Set on a takeover (never stored): the model's answer was cut mid-stream when the previous
   * holder died. Its text is not kept; the continuing run tells the client (`notice`
   * `answer_restarted`) and asks the model again.
   */
  answerCut: z.boolean().optional(),
});
export type RunState = z.infer<typeof RunState>;

/** The state of a run that has not taken a step yet. */
export const initialRunState = (): RunState => ({
  step: 0,
  lastSeq: 0,
  usage: { prompt_tokens: 0, completion_tokens: 0 },
});

/** Reads a stored state; anything unreadable is `null` (the run cannot be resumed). */
export function parseRunState(value: unknown): RunState | null {
  const parsed = RunState.safeParse(value ?? {});
  return parsed.success ? parsed.data : null;
}

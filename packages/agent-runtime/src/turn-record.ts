import { z } from 'zod';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { ChatMessage, type AssistantMessage } from './chat-message.js';

/** Where a run's turn record lives in the ephemeral store. */
export const turnRecordKey = (runId: string): string => `agent:run-turn:${runId}`;

/**
 * How long a turn record is kept: the resume window (the run log's retention), past which a
 * takeover has no run log to continue from either.
 */
export const TURN_RECORD_TTL_MS = 600_000;

/**
 * The model turn whose tool calls are about to run, with the model request (`step`) that made
 * it. Recorded only when the calls' `tool_call` events do not all go out before the first call
 * executes (`AGENT_MAX_PARALLEL_TOOLS=1`): a takeover then still knows the calls that had not
 * started, which the run log does not name.
 */
export const TurnRecord = z.object({
  step: z.number().int().positive(),
  assistant: ChatMessage,
});
export type TurnRecord = z.infer<typeof TurnRecord>;

/** Records the turn (replacing the run's previous one). */
export async function recordTurn(
  store: EphemeralStore,
  runId: string,
  step: number,
  assistant: AssistantMessage,
): Promise<void> {
  const record: TurnRecord = { step, assistant };
  await store.set(turnRecordKey(runId), JSON.stringify(record), { ttlMs: TURN_RECORD_TTL_MS });
}

/**
 * Deletes the runs' turn records (they hold the model's tool-call arguments, the user's
 * content): at a run's end, and with its session or its user's data. Returns how many there were.
 */
export async function deleteTurnRecords(
  store: EphemeralStore,
  runIds: readonly string[],
): Promise<number> {
  const deleted = await Promise.all(runIds.map((runId) => store.delete(turnRecordKey(runId))));
  return deleted.filter(Boolean).length;
}

/** The run's last recorded turn; `null` when there is none or it is unreadable. */
export async function readTurnRecord(
  store: EphemeralStore,
  runId: string,
): Promise<TurnRecord | null> {
  const raw = await store.get(turnRecordKey(runId));
  if (raw === null) return null;
  try {
    const parsed = TurnRecord.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

import {
  readTurnRecord,
  type HeldApproval,
  type PendingTurn,
  type RunState,
  type SettledCall,
  type StoredRun,
} from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import { AgentEvent } from '@agent-backend/protocol';

type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

/**
 * Where a run whose holder died stands: its stored state (the last step it committed) plus what
 * the run log says happened after it: the events sent (so the stream goes on after the last
 * one), and the turn in flight: an answer cut mid-stream (`answerCut`: its text is dropped and
 * the model asked again), or the text before the calls the model made (their
 * `tool_call` events are in the log before any of them executes), the calls that completed,
 * and the calls still held for approval. A call whose approval was decided but that has no
 * result was in flight: the continuing run repeats it only when its tool is `repeatSafe`. When
 * the turn's calls ran one after the other, its turn record (`recordTurn`) names every call:
 * those whose `tool_call` never went out had not started, and run when the run continues.
 */
export async function takeoverState(
  engines: Pick<Engines, 'runLog' | 'ephemeral'>,
  stored: StoredRun,
): Promise<RunState> {
  const { runLog } = engines;
  const base = stored.state!;
  const events: AgentEvent[] = [];
  let lastSeq = base.lastSeq;
  for await (const entry of runLog.read(stored.runId, { afterSeq: base.lastSeq })) {
    lastSeq = entry.seq;
    const parsed = AgentEvent.safeParse(safeJson(entry.data));
    if (parsed.success) events.push(parsed.data);
  }
  const pending = base.pendingTurn;
  const calls: ToolCall[] = pending
    ? ([...((pending.assistant as { tool_calls?: ToolCall[] }).tool_calls ?? [])] as ToolCall[])
    : [];
  const settled: Record<string, SettledCall> = { ...(pending?.settled ?? {}) };
  const approvals: Record<string, HeldApproval> = { ...(pending?.approvals ?? {}) };
  let text = '';
  for (const event of events) {
    switch (event.type) {
      case 'message_chunk':
        if (!pending && calls.length === 0) text += event.content;
        break;
      case 'tool_call':
        if (!pending && event.tool_call_id && !calls.some((c) => c.id === event.tool_call_id)) {
          calls.push({
            id: event.tool_call_id,
            type: 'function',
            function: { name: event.tool_name, arguments: JSON.stringify(event.tool_args) },
          });
        }
        break;
      case 'tool_result':
        if (event.tool_call_id) {
          settled[event.tool_call_id] = event.is_error
            ? { content: event.result, isError: true }
            : { content: event.result };
        }
        break;
      case 'approval_request':
        approvals[event.tool_call_id] = {
          request_id: event.request_id,
          expires_at: event.expires_at,
        };
        break;
      case 'approval_result':
        delete approvals[event.tool_call_id];
        break;
      default:
        break;
    }
  }
  for (const id of Object.keys(settled)) delete approvals[id];
  if (pending) {
    return { ...base, lastSeq, pendingTurn: { assistant: pending.assistant, settled, approvals } };
  }
  // The whole turn, when its calls ran one after the other: those without a `tool_call` event
  // had not started.
  const recorded = await readTurnRecord(engines.ephemeral, stored.runId);
  const whole =
    recorded?.step === base.step + 1 && recorded.assistant.role === 'assistant'
      ? recorded.assistant
      : undefined;
  const unstarted = (whole?.tool_calls ?? [])
    .filter((call) => !calls.some((c) => c.id === call.id))
    .map((call) => call.id);
  if (calls.length === 0 && !text && !whole) return { ...base, lastSeq };
  if (calls.length === 0 && !whole) {
    // An answer cut mid-stream: the model answers again, from the stored conversation, so its
    // answer is not doubled in the history; the client is told the text starts again.
    return { ...base, step: base.step + 1, lastSeq, answerCut: true };
  }
  const turn: PendingTurn = {
    assistant: whole ?? {
      role: 'assistant',
      content: text || null,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    },
    settled,
    approvals,
    ...(unstarted.length > 0 ? { unstarted } : {}),
  };
  return { step: base.step + 1, lastSeq, usage: base.usage, pendingTurn: turn };
}

function safeJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}

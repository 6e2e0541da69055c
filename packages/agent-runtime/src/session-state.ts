import { z } from 'zod';
import { TodoItem } from '@agent-backend/protocol';

/** A plan proposed in `plan` mode and not yet accepted. */
export const PendingPlan = z.object({
  summary: z.string(),
  steps: z.array(z.string().min(1)).min(1),
});
export type PendingPlan = z.infer<typeof PendingPlan>;

/**
 * The agent's own state of a session, kept beside the conversation (the `state` column): the
 * todo list of the planning tool and the plan waiting for the user. Parsed leniently: a state
 * written by an older version that no longer parses starts empty rather than failing the run.
 */
export const SessionState = z.object({
  todos: z.array(TodoItem).default([]),
  pendingPlan: PendingPlan.optional(),
});
export type SessionState = z.infer<typeof SessionState>;

/** Reads a stored state; anything unreadable becomes the empty state. */
export function parseSessionState(value: unknown): SessionState {
  const parsed = SessionState.safeParse(value ?? {});
  return parsed.success ? parsed.data : { todos: [] };
}

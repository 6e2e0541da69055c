import { sessionLeaseHolder } from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import type { RunLog } from '@agent-backend/run-log';

/** A run a client may join or cancel, as the join routes and the stopper know it. */
export interface JoinableRun {
  readonly runId: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly status: string;
}

/**
 * A run of `userId` that is running while its rows may not be stored yet: an invoked run's
 * session and run rows are written while its events already stream (docs/agent.md), so a client
 * that got its first events may join it on another replica before any row names it. Its
 * session's lease names it while it runs (the lease is held before its first event goes out),
 * and its run log's first event (`session`) names its session: both must agree, so only the
 * session's own user finds it. `sessionId` when the caller names the session; else it is read
 * from the run log. Null when nothing names the run as running for this user.
 */
export async function unstoredRun(
  deps: { readonly runLog: RunLog; readonly ephemeral: Engines['ephemeral'] },
  userId: string,
  runId: string,
  sessionId?: string,
): Promise<JoinableRun | null> {
  const session = sessionId ?? (await sessionOfRun(deps.runLog, runId));
  if (session === undefined) return null;
  const holder = await sessionLeaseHolder(deps.ephemeral, userId, session);
  return holder === runId ? { runId, sessionId: session, userId, status: 'running' } : null;
}

/** The session named by the run's first logged event, when that is its `session` event. */
async function sessionOfRun(runLog: RunLog, runId: string): Promise<string | undefined> {
  for await (const entry of runLog.read(runId, { afterSeq: 0 })) {
    if (entry.seq !== 1) return undefined;
    try {
      const event = JSON.parse(entry.data) as {
        type?: unknown;
        session_id?: unknown;
        run_id?: unknown;
      };
      if (
        event.type === 'session' &&
        event.run_id === runId &&
        typeof event.session_id === 'string'
      ) {
        return event.session_id;
      }
    } catch {
      // Not an event this service wrote.
    }
    return undefined;
  }
  return undefined;
}

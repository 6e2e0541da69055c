import type { ConversationMode } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import type { RunRequest } from './run-request.js';
import { parseRunState, type RunState } from './run-state.js';
import type { RunStatus } from './session-repository.js';

/**
 * The job queue of runs the worker role executes: background runs, resumes, takeovers (its jobs
 * name a run; an erasure removes a user's).
 */
export const AGENT_RUNS_QUEUE = 'agent-runs';

/** A run as a takeover or a resume reads it back (`agent_runs`). */
export interface StoredRun {
  readonly runId: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly mode: ConversationMode;
  readonly status: RunStatus;
  readonly background: boolean;
  /** The run's settings; `null` once it ended, or for a run stored before they were. */
  readonly request: RunRequest | null;
  /** Where it is; `null` for a run stored before states were (it cannot be resumed). */
  readonly state: RunState | null;
}

interface RunRow extends Record<string, unknown> {
  run_id: string;
  session_id: string;
  user_id: string;
  mode: ConversationMode;
  status: RunStatus;
  background: boolean;
  request: unknown;
  state: unknown;
}

const COLUMNS = 'run_id, session_id, user_id, mode, status, background, request, state';

const toStored = (row: RunRow): StoredRun => ({
  runId: row.run_id,
  sessionId: row.session_id,
  userId: row.user_id,
  mode: row.mode,
  status: row.status,
  background: row.background,
  request: isRunRequest(row.request) ? row.request : null,
  state: row.state === null ? null : parseRunState(row.state),
});

/**
 * The stored request is the runtime's own (written by `startRun`, never by a client): checked
 * for the fields a run cannot do without, so a row of another shape is not resumed.
 */
function isRunRequest(value: unknown): value is RunRequest {
  if (value === null || typeof value !== 'object') return false;
  const request = value as Partial<RunRequest>;
  return (
    typeof request.userId === 'string' &&
    typeof request.message === 'string' &&
    typeof request.model?.baseUrl === 'string' &&
    typeof request.capabilities === 'object'
  );
}

/**
 * Runs in the durable store as the replicas and workers that resume them see them: one run by
 * id, the state changes of suspending and resuming (each a compare-and-set on the status, so
 * two replicas never both resume one run), and the runs a takeover sweep looks at.
 */
export class RunRepository {
  constructor(private readonly db: Database) {}

  async load(runId: string): Promise<StoredRun | null> {
    const { rows } = await this.db.query<RunRow>(
      `SELECT ${COLUMNS} FROM agent_runs WHERE run_id = $1`,
      [runId],
    );
    const row = rows[0];
    return row ? toStored(row) : null;
  }

  /** Records the run as suspended with its state (the turn waiting for decisions). */
  async suspend(runId: string, state: RunState): Promise<boolean> {
    const { rows } = await this.db.query(
      `UPDATE agent_runs SET status = 'suspended', state = $2
        WHERE run_id = $1 AND status = 'running' RETURNING run_id`,
      [runId, JSON.stringify(state)],
    );
    return rows.length === 1;
  }

  /** Takes a suspended run back to `running`; `false` when another holder already did. */
  async resume(runId: string): Promise<boolean> {
    const { rows } = await this.db.query(
      `UPDATE agent_runs SET status = 'running'
        WHERE run_id = $1 AND status = 'suspended' RETURNING run_id`,
      [runId],
    );
    return rows.length === 1;
  }

  /**
   * Ends a suspended run as cancelled (`run_aborted`), unless a resume took it first: its
   * session and owner when it did, `null` otherwise.
   */
  async cancelSuspended(runId: string): Promise<{ userId: string; sessionId: string } | null> {
    const { rows } = await this.db.query<{ user_id: string; session_id: string }>(
      `UPDATE agent_runs SET status = 'aborted', error_code = 'run_aborted', ended_at = now(),
              request = NULL
        WHERE run_id = $1 AND status = 'suspended' RETURNING user_id, session_id`,
      [runId],
    );
    const row = rows[0];
    return row ? { userId: row.user_id, sessionId: row.session_id } : null;
  }

  /**
   * Ends a run that a cancel did not stop (`aborted`, `run_aborted`) unless it ended meanwhile:
   * no process ran it (a background run's queued start, a run whose replica died) or its process
   * did not answer. Once ended, no worker adopts it (`AgentRunner.adopt` and the resume
   * continue only a run still `running` or `suspended`). False when it had ended already.
   */
  async abandon(runId: string): Promise<boolean> {
    const { rows } = await this.db.query(
      `UPDATE agent_runs SET status = 'aborted', error_code = 'run_aborted', ended_at = now(),
              request = NULL
        WHERE run_id = $1 AND status IN ('running', 'suspended') RETURNING run_id`,
      [runId],
    );
    return rows.length === 1;
  }

  /** The ids of the user's runs recorded as `running` or `suspended` (not ended yet). */
  async unfinished(userId: string): Promise<string[]> {
    const { rows } = await this.db.query<{ run_id: string }>(
      `SELECT run_id FROM agent_runs WHERE user_id = $1 AND status IN ('running', 'suspended')`,
      [userId],
    );
    return rows.map((row) => row.run_id);
  }

  /**
   * Runs recorded as `running` that started before `startedBefore` (a takeover sweep's
   * candidates), oldest first, ties by run id, `limit` at most: a page. `after` (the last run of
   * the previous page) continues past it, so a sweep reaches every candidate however many older
   * runs are alive; a run erased since ends the pages early (the next sweep starts over).
   */
  async running(startedBefore: Date, limit = 100, after?: string): Promise<StoredRun[]> {
    const { rows } = await this.db.query<RunRow>(
      `SELECT ${COLUMNS} FROM agent_runs
        WHERE status = 'running' AND started_at < $1 AND request IS NOT NULL
          ${after === undefined ? '' : 'AND (started_at, run_id) > (SELECT started_at, run_id FROM agent_runs WHERE run_id = $3)'}
        ORDER BY started_at, run_id LIMIT $2`,
      [startedBefore.toISOString(), limit, ...(after === undefined ? [] : [after])],
    );
    return rows.map(toStored);
  }
}

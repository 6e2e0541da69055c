import type { ConversationMode } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import { ChatMessage } from './chat-message.js';
import { parseSessionState, type SessionState } from './session-state.js';

/** How a run ended, as stored in `agent_runs.status`. */
export type RunStatus = 'running' | 'done' | 'error' | 'aborted';

/** A session as a run needs it: owner, agent state, the run a resume attaches to. */
export interface SessionRecord {
  readonly sessionId: string;
  readonly userId: string;
  readonly state: SessionState;
  readonly lastRunId: string | null;
}

interface SessionRow extends Record<string, unknown> {
  session_id: string;
  user_id: string;
  state: unknown;
  last_run_id: string | null;
}

const toRecord = (row: SessionRow): SessionRecord => ({
  sessionId: row.session_id,
  userId: row.user_id,
  state: parseSessionState(row.state),
  lastRunId: row.last_run_id,
});

/**
 * Sessions, their conversation and their runs in the durable store (PGlite or PostgreSQL), so
 * a session continues on any API replica. Ownership is checked here: a session of another user
 * is reported as absent.
 */
export class SessionRepository {
  constructor(private readonly db: Database) {}

  /**
   * The user's session `sessionId`, created when it does not exist yet. `null` when it belongs
   * to someone else. Safe under concurrent calls for the same id.
   */
  async claim(sessionId: string, userId: string): Promise<SessionRecord | null> {
    // One round trip: the no-op update makes RETURNING yield the row whether it was inserted
    // now or existed (possibly someone else's, which is then reported as absent).
    const { rows } = await this.db.query<SessionRow>(
      `INSERT INTO agent_sessions (session_id, user_id) VALUES ($1, $2)
       ON CONFLICT (session_id) DO UPDATE SET session_id = EXCLUDED.session_id
       RETURNING session_id, user_id, state, last_run_id`,
      [sessionId, userId],
    );
    const row = rows[0];
    return row && row.user_id === userId ? toRecord(row) : null;
  }

  /** The user's session, or `null` when there is none (or it is another user's). */
  async find(sessionId: string, userId: string): Promise<SessionRecord | null> {
    const { rows } = await this.db.query<SessionRow>(
      'SELECT session_id, user_id, state, last_run_id FROM agent_sessions WHERE session_id = $1',
      [sessionId],
    );
    const row = rows[0];
    return row && row.user_id === userId ? toRecord(row) : null;
  }

  /** The conversation in order. Messages that no longer parse are skipped, not fatal. */
  async messages(sessionId: string): Promise<ChatMessage[]> {
    const { rows } = await this.db.query<{ message: unknown }>(
      'SELECT message FROM agent_messages WHERE session_id = $1 ORDER BY seq',
      [sessionId],
    );
    return rows.flatMap((row) => {
      const parsed = ChatMessage.safeParse(row.message);
      return parsed.success ? [parsed.data] : [];
    });
  }

  /**
   * Appends messages after the last one. The primary key (session, seq) makes a second
   * concurrent writer fail instead of interleaving; the session lease keeps that from happening
   * in the first place.
   */
  async append(sessionId: string, runId: string, messages: readonly ChatMessage[]): Promise<void> {
    if (messages.length === 0) return;
    // One statement, so atomic without a transaction: numbered after the current last message.
    await this.db.query(
      `INSERT INTO agent_messages (session_id, seq, run_id, message)
       SELECT $1, last.seq + m.ord::int, $2, m.message
       FROM (SELECT COALESCE(MAX(seq), 0)::int AS seq FROM agent_messages WHERE session_id = $1) last,
            jsonb_array_elements($3::jsonb) WITH ORDINALITY AS m(message, ord)`,
      [sessionId, runId, JSON.stringify(messages)],
    );
  }

  async saveState(sessionId: string, state: SessionState): Promise<void> {
    await this.db.query(
      'UPDATE agent_sessions SET state = $2, updated_at = now() WHERE session_id = $1',
      [sessionId, JSON.stringify(state)],
    );
  }

  /**
   * Records a new run and makes it the one a resumed stream of the session attaches to. The
   * caller holds the session's lease, so a run of the session still marked `running` belongs to
   * a replica that died mid-run: it is recorded as aborted (`replica_lost`) in the same statement.
   */
  async startRun(run: {
    runId: string;
    sessionId: string;
    userId: string;
    mode: ConversationMode;
  }): Promise<void> {
    await this.db.query(
      `WITH stale AS (
         UPDATE agent_runs SET status = 'aborted', error_code = 'replica_lost', ended_at = now()
          WHERE session_id = $2 AND status = 'running'
       ), run AS (
         INSERT INTO agent_runs (run_id, session_id, user_id, mode, status)
         VALUES ($1, $2, $3, $4, 'running')
       )
       UPDATE agent_sessions SET last_run_id = $1, updated_at = now() WHERE session_id = $2`,
      [run.runId, run.sessionId, run.userId, run.mode],
    );
  }

  async finishRun(runId: string, status: RunStatus, errorCode?: string): Promise<void> {
    await this.db.query(
      'UPDATE agent_runs SET status = $2, error_code = $3, ended_at = now() WHERE run_id = $1',
      [runId, status, errorCode ?? null],
    );
  }

  /** The run's session and owner, to check a `Last-Event-ID` before replaying it. */
  async findRun(
    runId: string,
  ): Promise<{ sessionId: string; userId: string; status: RunStatus } | null> {
    const { rows } = await this.db.query<{
      session_id: string;
      user_id: string;
      status: RunStatus;
    }>('SELECT session_id, user_id, status FROM agent_runs WHERE run_id = $1', [runId]);
    const row = rows[0];
    return row ? { sessionId: row.session_id, userId: row.user_id, status: row.status } : null;
  }
}

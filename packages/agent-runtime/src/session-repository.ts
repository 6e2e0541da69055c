import type { ApprovalResultEvent, ConversationMode, TokenUsage } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import { ChatMessage } from './chat-message.js';
import type { RunState } from './run-state.js';
import { parseSessionState, type SessionState } from './session-state.js';

/**
 * A run's status, as stored in `agent_runs.status`: `running` (a replica or worker holds it),
 * `suspended` (waiting for approvals, nobody holds it), or how it ended.
 */
export type RunStatus = 'running' | 'suspended' | 'done' | 'error' | 'aborted';

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
 * A session's key: its id names a session of its owner only, so two users may use the same id
 * and each has a session of their own under it (migration `0011_sessions_by_user`).
 */
export interface SessionKey {
  readonly userId: string;
  readonly sessionId: string;
}

/**
 * Sessions, their conversation and their runs in the durable store (PGlite or PostgreSQL), so
 * a session continues on any API replica. Every statement is keyed by owner and id: no method
 * can reach a session of another user, whatever id it is given.
 */
export class SessionRepository {
  constructor(private readonly db: Database) {}

  /** The user's session `sessionId`, created when it does not exist yet. Safe under concurrent calls. */
  async claim(sessionId: string, userId: string): Promise<SessionRecord> {
    // One round trip: the no-op update makes RETURNING yield the row whether it was inserted
    // now or existed.
    const { rows } = await this.db.query<SessionRow>(
      `INSERT INTO agent_sessions (user_id, session_id) VALUES ($1, $2)
       ON CONFLICT (user_id, session_id) DO UPDATE SET session_id = EXCLUDED.session_id
       RETURNING session_id, user_id, state, last_run_id`,
      [userId, sessionId],
    );
    return toRecord(rows[0]!);
  }

  /** The user's session, or `null` when they have none of that id. */
  async find(sessionId: string, userId: string): Promise<SessionRecord | null> {
    const { rows } = await this.db.query<SessionRow>(
      `SELECT session_id, user_id, state, last_run_id FROM agent_sessions
       WHERE user_id = $1 AND session_id = $2`,
      [userId, sessionId],
    );
    const row = rows[0];
    return row ? toRecord(row) : null;
  }

  /** The conversation in order. Messages that no longer parse are skipped, not fatal. */
  async messages(session: SessionKey): Promise<ChatMessage[]> {
    const { rows } = await this.db.query<{ message: unknown }>(
      'SELECT message FROM agent_messages WHERE user_id = $1 AND session_id = $2 ORDER BY seq',
      [session.userId, session.sessionId],
    );
    return rows.flatMap((row) => {
      const parsed = ChatMessage.safeParse(row.message);
      return parsed.success ? [parsed.data] : [];
    });
  }

  /**
   * Appends messages after the last one. The primary key (user, session, seq) makes a second
   * concurrent writer fail instead of interleaving; the session lease keeps that from happening
   * in the first place.
   */
  async append(
    session: SessionKey,
    runId: string,
    messages: readonly ChatMessage[],
  ): Promise<void> {
    if (messages.length === 0) return;
    // A session the client did not name gets the start of its first user message as title.
    const first = messages.find((m) => m.role === 'user' && m.content.trim() !== '');
    const title = first?.content ? titleFrom(first.content) : null;
    // One statement, so atomic without a transaction: numbered after the current last message.
    await this.db.query(
      `WITH appended AS (
         INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
         SELECT $1, $2, last.seq + m.ord::int, $3, m.message
         FROM (SELECT COALESCE(MAX(seq), 0)::int AS seq FROM agent_messages
                WHERE user_id = $1 AND session_id = $2) last,
              jsonb_array_elements($4::jsonb) WITH ORDINALITY AS m(message, ord)
       )
       UPDATE agent_sessions SET title = $5
        WHERE user_id = $1 AND session_id = $2 AND title IS NULL AND $5::text IS NOT NULL`,
      [session.userId, session.sessionId, runId, JSON.stringify(messages), title],
    );
  }

  /** Records how an approval ended, so the stored conversation shows it beside the call. */
  async recordApproval(
    run: SessionKey & { readonly runId: string },
    approval: ApprovalResultEvent,
  ): Promise<void> {
    await this.db.query(
      `INSERT INTO agent_approvals
         (user_id, session_id, request_id, run_id, tool_call_id, tool_name, outcome, tool_args, message)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (user_id, session_id, request_id) DO NOTHING`,
      [
        run.userId,
        run.sessionId,
        approval.request_id,
        run.runId,
        approval.tool_call_id,
        approval.tool_name,
        approval.outcome,
        approval.tool_args ? JSON.stringify(approval.tool_args) : null,
        approval.message ?? null,
      ],
    );
  }

  /**
   * Stores one step of a run in one statement: the step's messages after the last one, the
   * session's agent state, and the run's resumable state (`agent_runs.state`), so a run taken
   * over or resumed elsewhere continues from exactly what is stored.
   */
  async commitStep(
    run: SessionKey & { readonly runId: string },
    messages: readonly ChatMessage[],
    state: SessionState,
    runState: RunState,
  ): Promise<void> {
    await this.db.query(
      `WITH appended AS (
         INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
         SELECT $1, $2, last.seq + m.ord::int, $3, m.message
         FROM (SELECT COALESCE(MAX(seq), 0)::int AS seq FROM agent_messages
                WHERE user_id = $1 AND session_id = $2) last,
              jsonb_array_elements($4::jsonb) WITH ORDINALITY AS m(message, ord)
       ), session AS (
         UPDATE agent_sessions SET state = $5, updated_at = now()
          WHERE user_id = $1 AND session_id = $2
       )
       UPDATE agent_runs SET state = $6 WHERE run_id = $3`,
      [
        run.userId,
        run.sessionId,
        run.runId,
        JSON.stringify(messages),
        JSON.stringify(state),
        JSON.stringify(runState),
      ],
    );
  }

  /**
   * Records the run as suspended, in one statement: the session's agent state and the run's
   * state with its pending turn (`status` from `running` to `suspended`).
   */
  async suspendRun(
    run: SessionKey & { readonly runId: string },
    state: SessionState,
    runState: RunState,
  ): Promise<void> {
    await this.db.query(
      `WITH session AS (
         UPDATE agent_sessions SET state = $3, updated_at = now()
          WHERE user_id = $1 AND session_id = $2
       )
       UPDATE agent_runs SET status = 'suspended', state = $5 WHERE run_id = $4`,
      [run.userId, run.sessionId, JSON.stringify(state), run.runId, JSON.stringify(runState)],
    );
  }

  /** Whether the run stored any message yet (its user message comes first). */
  async hasRunMessages(runId: string): Promise<boolean> {
    const { rows } = await this.db.query('SELECT 1 FROM agent_messages WHERE run_id = $1 LIMIT 1', [
      runId,
    ]);
    return rows.length > 0;
  }

  async saveState(session: SessionKey, state: SessionState): Promise<void> {
    await this.db.query(
      `UPDATE agent_sessions SET state = $3, updated_at = now()
       WHERE user_id = $1 AND session_id = $2`,
      [session.userId, session.sessionId, JSON.stringify(state)],
    );
  }

  /**
   * Records a new run and makes it the one a resumed stream of the session attaches to,
   * claiming the session in the same statement (created when it does not exist yet, as
   * {@link claim}). The caller holds the session's lease, so a run of the session still marked `running` belongs to
   * a replica that died mid-run and was not taken over: it is recorded as aborted
   * (`replica_lost`) in the same statement. `request` (the run's settings) and the initial
   * `state` are what a takeover or a resume reads back (`RunRepository`).
   *
   * `opening`: the first messages of a session new with this run (the client's history and the
   * user message), stored in the same statement from the session's first position, the first
   * user message giving the session its title; only for a session id generated for this run.
   */
  async startRun(run: {
    runId: string;
    sessionId: string;
    userId: string;
    mode: ConversationMode;
    model?: string;
    request?: unknown;
    state?: RunState;
    background?: boolean;
    opening?: readonly ChatMessage[];
  }): Promise<void> {
    const opening = run.opening ?? [];
    const first = opening.find((m) => m.role === 'user' && m.content.trim() !== '');
    const title = first?.content ? titleFrom(first.content) : null;
    await this.db.query(
      `WITH stale AS (
         UPDATE agent_runs SET status = 'aborted', error_code = 'replica_lost', ended_at = now(),
                request = NULL
          WHERE user_id = $3 AND session_id = $2 AND status IN ('running', 'suspended')
       ), run AS (
         INSERT INTO agent_runs (run_id, session_id, user_id, mode, model, status, request, state,
                                 background)
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8)
       ), opening AS (
         INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
         SELECT $3, $2, m.ord::int, $1, m.message
         FROM jsonb_array_elements($9::jsonb) WITH ORDINALITY AS m(message, ord)
       )
       INSERT INTO agent_sessions (user_id, session_id, last_run_id, title)
       VALUES ($3, $2, $1, $10)
       ON CONFLICT (user_id, session_id) DO UPDATE SET last_run_id = $1, updated_at = now()`,
      [
        run.runId,
        run.sessionId,
        run.userId,
        run.mode,
        run.model ?? null,
        run.request === undefined ? null : JSON.stringify(run.request),
        run.state ? JSON.stringify(run.state) : null,
        run.background ?? false,
        JSON.stringify(opening),
        title,
      ],
    );
  }

  /**
   * Records how the run ended and the tokens its model requests reported (`GET /api/usage`);
   * the run's stored settings (its model key among them) are dropped: an ended run is never
   * resumed.
   */
  async finishRun(
    runId: string,
    status: RunStatus,
    errorCode?: string,
    usage?: TokenUsage,
  ): Promise<void> {
    await this.db.query(
      `UPDATE agent_runs SET status = $2, error_code = $3, ended_at = now(),
         prompt_tokens = $4, completion_tokens = $5, request = NULL
       WHERE run_id = $1`,
      [runId, status, errorCode ?? null, usage?.prompt_tokens ?? 0, usage?.completion_tokens ?? 0],
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

/** Most characters of a title taken from the first message. */
const TITLE_CHARS = 80;

/** The first line of `text`, cut at a word when it is long. */
function titleFrom(text: string): string {
  const line = text.trim().split('\n', 1)[0]!.trim();
  if (line.length <= TITLE_CHARS) return line;
  const cut = line.slice(0, TITLE_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

import type {
  AgentRun,
  ListMessagesQuery,
  ListSessionsQuery,
  MessageList,
  SessionDetail,
  SessionList,
  SessionSummary,
  StoredMessage,
} from '@agent-backend/protocol';
import type { Database, Queryable } from '@agent-backend/store';
import { ChatMessage } from './chat-message.js';
import {
  decodeMessageCursor,
  decodeSessionCursor,
  encodeMessageCursor,
  encodeSessionCursor,
} from './list-cursor.js';
import { RESERVED_SESSION_ID_PREFIXES } from './session-ids.js';
import type { SessionKey } from './session-repository.js';
import { parseSessionState } from './session-state.js';

/** Most characters of `last_message_preview`. */
export const PREVIEW_CHARS = 200;

/** A timestamp as the API writes it: UTC, microseconds (the list cursor needs them). */
const iso = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** A user or assistant message with text: what a preview shows and a title starts from. */
const TEXT_MESSAGE = `m.message->>'role' IN ('user', 'assistant') AND COALESCE(m.message->>'content', '') <> ''`;

/** The summary's columns, for a session `s`. */
const SUMMARY_COLUMNS = `
  s.session_id, s.title, ${iso('s.created_at')} AS created_at, ${iso('s.updated_at')} AS updated_at,
  (SELECT count(*)::int FROM agent_messages m
    WHERE m.user_id = s.user_id AND m.session_id = s.session_id) AS message_count,
  (SELECT left(m.message->>'content', ${PREVIEW_CHARS}) FROM agent_messages m
    WHERE m.user_id = s.user_id AND m.session_id = s.session_id AND ${TEXT_MESSAGE}
    ORDER BY m.seq DESC LIMIT 1) AS last_message_preview,
  (SELECT r.run_id FROM agent_runs r
    WHERE r.user_id = s.user_id AND r.session_id = s.session_id AND r.status = 'running'
    ORDER BY r.started_at DESC, r.run_id DESC LIMIT 1) AS active_run_id`;

interface SummaryRow extends Record<string, unknown> {
  session_id: string;
  title: string | null;
  created_at: string;
  updated_at: string;
  message_count: number;
  last_message_preview: string | null;
  active_run_id: string | null;
}

const toSummary = (row: SummaryRow): SessionSummary => ({
  session_id: row.session_id,
  title: row.title,
  created_at: row.created_at,
  updated_at: row.updated_at,
  message_count: row.message_count,
  last_message_preview: row.last_message_preview,
  active_run_id: row.active_run_id,
});

/** `LIKE` patterns of the service's own session ids (chats', scheduled tasks'), not listed. */
const RESERVED_PATTERNS = RESERVED_SESSION_ID_PREFIXES.map((prefix) => `${prefix}%`);

/**
 * A user's conversations as the conversations API shows them (docs/protocol.md): list, read,
 * rename, delete. Every statement is keyed by the owner, so another user's session of the same
 * id is simply not found.
 */
export class ConversationRepository {
  constructor(private readonly db: Database) {}

  /**
   * The user's sessions, latest activity first, `limit` at a time. Keyset pages on
   * (updated_at, session_id): a session created or active during the paging moves above the
   * cursor, so a later page neither repeats one nor skips one that did not move.
   * @throws InvalidCursorError for a cursor this method did not make.
   */
  async list(userId: string, query: ListSessionsQuery): Promise<SessionList> {
    const after = query.cursor === undefined ? undefined : decodeSessionCursor(query.cursor);
    const params: unknown[] = [userId, query.limit + 1, RESERVED_PATTERNS];
    const filters: string[] = [];
    if (query.q) {
      params.push(`%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      filters.push(`s.title ILIKE $${params.length}`);
    }
    if (after) {
      params.push(after.updatedAt, after.sessionId);
      filters.push(
        `(s.updated_at, s.session_id) < ($${params.length - 1}::timestamptz, $${params.length})`,
      );
    }
    const { rows } = await this.db.query<SummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM agent_sessions s
       WHERE s.user_id = $1 AND NOT (s.session_id LIKE ANY ($3::text[]))
         ${filters.map((f) => `AND ${f}`).join(' ')}
       ORDER BY s.updated_at DESC, s.session_id DESC
       LIMIT $2`,
      params,
    );
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      sessions: page.map(toSummary),
      next_cursor:
        rows.length > query.limit && last
          ? encodeSessionCursor({ updatedAt: last.updated_at, sessionId: last.session_id })
          : null,
    };
  }

  /** The session with its todos, pending plan and last run's settings; null when not the user's. */
  async get(session: SessionKey): Promise<SessionDetail | null> {
    const { rows } = await this.db.query<
      SummaryRow & { state: unknown; mode: string | null; model: string | null }
    >(
      `SELECT ${SUMMARY_COLUMNS}, s.state, r.mode, r.model
       FROM agent_sessions s
       LEFT JOIN agent_runs r ON r.user_id = s.user_id AND r.run_id = s.last_run_id
       WHERE s.user_id = $1 AND s.session_id = $2`,
      [session.userId, session.sessionId],
    );
    const row = rows[0];
    if (!row) return null;
    const state = parseSessionState(row.state);
    const mode =
      row.mode === 'agent' || row.mode === 'ask' || row.mode === 'plan' ? row.mode : null;
    return {
      ...toSummary(row),
      todos: state.todos,
      pending_plan: state.pendingPlan ?? null,
      settings: mode ? { mode, model: row.model } : null,
    };
  }

  /**
   * The stored conversation, oldest first, `limit` messages at a time; null when the session is
   * not the user's. A tool message carries its call's tool name (from the assistant message
   * that called it) and the approval's outcome when the call waited for one.
   * @throws InvalidCursorError for a cursor this method did not make.
   */
  async messages(session: SessionKey, query: ListMessagesQuery): Promise<MessageList | null> {
    const afterSeq = query.cursor === undefined ? 0 : decodeMessageCursor(query.cursor);
    const exists = await this.db.query(
      'SELECT 1 FROM agent_sessions WHERE user_id = $1 AND session_id = $2',
      [session.userId, session.sessionId],
    );
    if (exists.rows.length === 0) return null;
    const { rows } = await this.db.query<MessageRow>(
      `SELECT m.seq, m.run_id, ${iso('m.created_at')} AS created_at, m.message,
         (SELECT tc->'function'->>'name'
            FROM agent_messages a, jsonb_array_elements(a.message->'tool_calls') tc
           WHERE m.message->>'role' = 'tool'
             AND a.user_id = m.user_id AND a.session_id = m.session_id AND a.seq < m.seq
             AND a.message->>'role' = 'assistant' AND tc->>'id' = m.message->>'tool_call_id'
           ORDER BY a.seq DESC LIMIT 1) AS tool_name,
         ap.request_id, ap.outcome, ap.tool_args AS approved_args, ap.message AS approval_message
       FROM agent_messages m
       LEFT JOIN agent_approvals ap
         ON m.message->>'role' = 'tool' AND ap.user_id = m.user_id
        AND ap.session_id = m.session_id AND ap.run_id = m.run_id
        AND ap.tool_call_id = m.message->>'tool_call_id'
       WHERE m.user_id = $1 AND m.session_id = $2 AND m.seq > $3
       ORDER BY m.seq
       LIMIT $4`,
      [session.userId, session.sessionId, afterSeq, query.limit + 1],
    );
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      messages: page.flatMap(toStoredMessage),
      next_cursor: rows.length > query.limit && last ? encodeMessageCursor(last.seq) : null,
    };
  }

  /** The user's run; null when it is not theirs (or unknown). */
  async run(userId: string, runId: string): Promise<AgentRun | null> {
    const { rows } = await this.db.query<{
      run_id: string;
      session_id: string;
      status: AgentRun['status'];
      started_at: string;
      ended_at: string | null;
      error_code: string | null;
      prompt_tokens: string | number;
      completion_tokens: string | number;
    }>(
      `SELECT run_id, session_id, status, ${iso('started_at')} AS started_at,
         CASE WHEN ended_at IS NULL THEN NULL ELSE ${iso('ended_at')} END AS ended_at,
         error_code, prompt_tokens, completion_tokens
       FROM agent_runs WHERE user_id = $1 AND run_id = $2`,
      [userId, runId],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      run_id: row.run_id,
      session_id: row.session_id,
      status: row.status,
      started_at: row.started_at,
      ended_at: row.ended_at,
      error: row.error_code ? { code: row.error_code } : null,
      usage: {
        prompt_tokens: Number(row.prompt_tokens),
        completion_tokens: Number(row.completion_tokens),
      },
    };
  }

  /** Sets the title; false when the session is not the user's. */
  async rename(session: SessionKey, title: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE agent_sessions SET title = $3 WHERE user_id = $1 AND session_id = $2',
      [session.userId, session.sessionId, title],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * Deletes the session and every row of it (the cascade of {@link deleteSessions}). Answers the
   * ids of the deleted runs (for the run log), or null when the session is not the user's.
   */
  async delete(session: SessionKey): Promise<readonly string[] | null> {
    const deleted = await deleteSessions(this.db, [session]);
    return deleted.sessions > 0 ? deleted.runIds : null;
  }
}

/**
 * The cascade of a session delete, for the conversations API's DELETE and the retention sweep:
 * messages, runs (with their usage), approvals and todos go with the session row (foreign keys,
 * `ON DELETE CASCADE`); the sandbox's row in the same statement, returned so the caller destroys
 * the sandbox with its files (one it does not destroy is found by the worker's sandbox sweep as an
 * orphan). With `idleBefore`, only
 * sessions whose last activity (`updated_at`) is older are deleted, and a session whose row a
 * running statement holds (a run starting or storing a message) is skipped rather than waited
 * for: a session used while the sweep runs survives it. Returns how many were deleted.
 */
export async function deleteSessions(
  db: Queryable,
  sessions: readonly SessionKey[],
  idleBefore?: Date,
): Promise<DeletedSessions> {
  if (sessions.length === 0) return { sessions: 0, runIds: [], sandboxes: [] };
  // The API's delete waits for a statement holding the row; the sweep passes it by.
  const lock = idleBefore ? 'FOR UPDATE OF s SKIP LOCKED' : 'FOR UPDATE OF s';
  const { rows } = await db.query<{
    sessions: number;
    run_ids: string[];
    sandboxes: Array<{ provider: string; sandbox_id: string }>;
  }>(
    `WITH doomed AS (
       SELECT s.user_id, s.session_id FROM agent_sessions s
         JOIN unnest($1::text[], $2::text[]) AS k (user_id, session_id)
           ON s.user_id = k.user_id AND s.session_id = k.session_id
        WHERE $3::timestamptz IS NULL OR s.updated_at < $3::timestamptz
        ${lock}
     ), sandbox AS (
       DELETE FROM session_sandboxes x USING doomed d
        WHERE x.user_id = d.user_id AND x.session_id = d.session_id
        RETURNING x.provider, x.sandbox_id
     ), runs AS (
       SELECT r.run_id FROM agent_runs r JOIN doomed d
           ON r.user_id = d.user_id AND r.session_id = d.session_id
     ), deleted AS (
       DELETE FROM agent_sessions s USING doomed d
        WHERE s.user_id = d.user_id AND s.session_id = d.session_id
        RETURNING s.session_id
     )
     SELECT (SELECT count(*) FROM deleted)::int AS sessions,
            (SELECT coalesce(array_agg(run_id), '{}') FROM runs) AS run_ids,
            (SELECT coalesce(json_agg(sandbox), '[]') FROM sandbox) AS sandboxes`,
    [sessions.map((s) => s.userId), sessions.map((s) => s.sessionId), idleBefore ?? null],
  );
  return {
    sessions: rows[0]?.sessions ?? 0,
    runIds: rows[0]?.run_ids ?? [],
    sandboxes: (rows[0]?.sandboxes ?? []).map((x) => ({
      provider: x.provider,
      sandboxId: x.sandbox_id,
    })),
  };
}

/**
 * What {@link deleteSessions} removed: the sessions, the ids of their runs (for the run log), and
 * the sandboxes whose rows went with them (for their provider to destroy).
 */
export interface DeletedSessions {
  readonly sessions: number;
  readonly runIds: readonly string[];
  readonly sandboxes: ReadonlyArray<{ readonly provider: string; readonly sandboxId: string }>;
}

interface MessageRow extends Record<string, unknown> {
  seq: number;
  run_id: string;
  created_at: string;
  message: unknown;
  tool_name: string | null;
  request_id: string | null;
  outcome: string | null;
  approved_args: Record<string, unknown> | null;
  approval_message: string | null;
}

/** A stored message in the API's shape; one that no longer parses is skipped, not fatal. */
function toStoredMessage(row: MessageRow): StoredMessage[] {
  const parsed = ChatMessage.safeParse(row.message);
  if (!parsed.success) return [];
  const base = { seq: row.seq, run_id: row.run_id, created_at: row.created_at };
  const message = parsed.data;
  switch (message.role) {
    case 'system':
      return [];
    case 'user':
      return [{ ...base, role: 'user', content: message.content }];
    case 'assistant':
      return [
        {
          ...base,
          role: 'assistant',
          content: message.content,
          tool_calls: (message.tool_calls ?? []).map((call) => ({
            tool_call_id: call.id,
            tool_name: call.function.name,
            tool_args: parseArgs(call.function.arguments),
          })),
        },
      ];
    case 'tool':
      return [
        {
          ...base,
          role: 'tool',
          tool_call_id: message.tool_call_id,
          tool_name: row.tool_name,
          result: message.content,
          ...(row.request_id && isOutcome(row.outcome)
            ? {
                approval: {
                  request_id: row.request_id,
                  outcome: row.outcome,
                  ...(row.approved_args ? { tool_args: row.approved_args } : {}),
                  ...(row.approval_message !== null ? { message: row.approval_message } : {}),
                },
              }
            : {}),
        },
      ];
  }
}

const OUTCOMES = ['approved', 'edited', 'rejected', 'timed_out', 'cancelled'] as const;
const isOutcome = (value: string | null): value is (typeof OUTCOMES)[number] =>
  (OUTCOMES as readonly (string | null)[]).includes(value);

/** The model's arguments as the `tool_call` event shows them: an object, `{}` when not one. */
function parseArgs(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

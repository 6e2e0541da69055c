import type { Migration } from './migration.js';

/**
 * Indexes by user, the chat inbox, token cut-offs, conversations, the audit log, erasures, run
 * state.
 */
export const MIGRATIONS_FROM_0009: readonly Migration[] = [
  {
    id: '0009_scheduled_tasks_by_user',
    sql: `
      -- GET /api/scheduled-tasks: a user's tasks, most recently changed first.
      CREATE INDEX scheduled_tasks_user_idx ON scheduled_tasks (user_id, updated_at DESC);
    `,
  },
  {
    id: '0010_chat_inbox',
    sql: `
      -- Chat-platform messages acknowledged to the platform, kept until answered: the job
      -- queue (Redis) may lose them, this table may not (packages/chat-platform/src/inbox.ts).
      CREATE TABLE chat_inbox (
        platform    text NOT NULL,
        event_id    text NOT NULL,                  -- the platform's event id: one row per event
        job         jsonb NOT NULL,                 -- the ChatMessageJob queued for the worker
        received_at timestamptz NOT NULL DEFAULT now(),
        replied_at  timestamptz,                    -- set once the reply went out (or was logged)
        PRIMARY KEY (platform, event_id)
      );
      CREATE INDEX chat_inbox_unanswered ON chat_inbox (received_at) WHERE replied_at IS NULL;
      CREATE INDEX chat_inbox_received ON chat_inbox (received_at);
    `,
  },
  {
    id: '0011_sessions_by_user',
    sql: `
      -- A session id names a session of its owner only: each user's ids are their
      -- own space, so no user can take, read or block a session id another user or the service
      -- (chat:, task:) uses. Rows stored before keep their owner and go on working.
      ALTER TABLE agent_messages ADD COLUMN user_id text;
      UPDATE agent_messages m SET user_id = s.user_id
        FROM agent_sessions s WHERE s.session_id = m.session_id;
      ALTER TABLE agent_messages ALTER COLUMN user_id SET NOT NULL;
      ALTER TABLE agent_messages DROP CONSTRAINT agent_messages_session_id_fkey;
      ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_session_id_fkey;
      ALTER TABLE agent_messages DROP CONSTRAINT agent_messages_pkey;
      ALTER TABLE agent_sessions DROP CONSTRAINT agent_sessions_pkey;
      ALTER TABLE agent_sessions ADD PRIMARY KEY (user_id, session_id);
      ALTER TABLE agent_messages ADD PRIMARY KEY (user_id, session_id, seq);
      ALTER TABLE agent_messages ADD CONSTRAINT agent_messages_session_fkey
        FOREIGN KEY (user_id, session_id) REFERENCES agent_sessions (user_id, session_id)
        ON DELETE CASCADE;
      ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_session_fkey
        FOREIGN KEY (user_id, session_id) REFERENCES agent_sessions (user_id, session_id)
        ON DELETE CASCADE;
      DROP INDEX agent_runs_session_id_idx;
      CREATE INDEX agent_runs_session_idx ON agent_runs (user_id, session_id, started_at);
      -- One sandbox per session of a user.
      ALTER TABLE session_sandboxes DROP CONSTRAINT session_sandboxes_pkey;
      ALTER TABLE session_sandboxes ADD PRIMARY KEY (user_id, session_id);
    `,
  },
  {
    id: '0012_token_cutoffs',
    sql: `
      -- Per user, the time before which the service's access tokens no longer count (the
      -- operator revoked the user, or the user signed out everywhere). Every replica polls the
      -- rows changed lately (recorded_at, the database's clock) into memory.
      CREATE TABLE token_cutoffs (
        user_id     text PRIMARY KEY,
        not_before  timestamptz NOT NULL,             -- tokens issued at or before this are refused
        recorded_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX token_cutoffs_recorded_idx ON token_cutoffs (recorded_at);
      `,
  },
  {
    id: '0013_conversations',
    sql: `
      -- The conversations API (docs/protocol.md): a session's title (set from its first user
      -- message when the client gives none), the list of a user's sessions by latest activity
      -- (keyset pages on (updated_at, session_id)), each run's token usage, and the outcome of
      -- each approval, so a stored conversation shows what was approved or refused.
      ALTER TABLE agent_sessions ADD COLUMN title text;
      DROP INDEX agent_sessions_user_id_idx;
      CREATE INDEX agent_sessions_activity_idx
        ON agent_sessions (user_id, updated_at DESC, session_id DESC);
      ALTER TABLE agent_runs ADD COLUMN prompt_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE agent_runs ADD COLUMN completion_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE agent_runs ADD COLUMN model text;
      CREATE INDEX agent_runs_user_started_idx ON agent_runs (user_id, started_at);
      CREATE TABLE agent_approvals (
        user_id      text NOT NULL,
        session_id   text NOT NULL,
        request_id   text NOT NULL,
        run_id       text NOT NULL,
        tool_call_id text NOT NULL,
        tool_name    text NOT NULL,
        outcome      text NOT NULL,                 -- approved, edited, rejected, timed_out, cancelled
        tool_args    jsonb,                         -- the arguments that ran (edited ones after edited)
        message      text,                          -- the rejecting user's note
        created_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, session_id, request_id),
        FOREIGN KEY (user_id, session_id) REFERENCES agent_sessions (user_id, session_id)
          ON DELETE CASCADE
      );
      CREATE INDEX agent_approvals_call_idx ON agent_approvals (user_id, session_id, run_id, tool_call_id);
    `,
  },
  {
    id: '0014_audit_log',
    sql: `
      -- Security events (packages/store/src/audit-log.ts, docs/operations.md): who did what,
      -- when and from where, never a secret. Rows are added and, past AUDIT_LOG_RETENTION_DAYS,
      -- deleted by the retention sweep; never changed (the rule drops every UPDATE).
      CREATE TABLE audit_log (
        event_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        occurred_at    timestamptz NOT NULL DEFAULT now(),
        action         text NOT NULL,                -- token.issued, approval.decided, operator.call, ...
        user_id        text,                         -- the user the event concerns; null: none (key.rotated)
        actor          text NOT NULL,                -- who: user, operator, login_layer, cli, service
        client_address text,                         -- the request's client address; null outside HTTP
        request_id     text,                         -- the request's X-Request-Id
        details        jsonb NOT NULL DEFAULT '{}'   -- what, by action; never a token or key
      );
      CREATE INDEX audit_log_user_idx ON audit_log (user_id, event_id);
      CREATE INDEX audit_log_time_idx ON audit_log (occurred_at);
      CREATE RULE audit_log_append_only AS ON UPDATE TO audit_log DO INSTEAD NOTHING;
      -- The client a refresh token was last exchanged from (hex SHA-256 of address and user
      -- agent): a refresh from another client is an audit event.
      ALTER TABLE refresh_tokens ADD COLUMN last_client text;
      -- Retention: finished task runs and untouched documents by age.
      CREATE INDEX scheduled_task_runs_finished_idx ON scheduled_task_runs (finished_at)
        WHERE finished_at IS NOT NULL;
      CREATE INDEX knowledge_documents_updated_idx ON knowledge_documents (updated_at);
      CREATE INDEX agent_sessions_idle_idx ON agent_sessions (updated_at);
      CREATE INDEX memories_updated_idx ON memories (updated_at);
    `,
  },
  {
    id: '0015_erasures',
    sql: `
      -- A user's data erased (packages/user-data): the row is written before anything is
      -- removed, so an erasure cut short (a killed process) is finished by whichever process
      -- finds it pending with its lease run out. Once done, it keeps the user id only until the
      -- user's access tokens have expired (forget_after); then the token cutoff goes and the
      -- row stays as a record that names nobody.
      CREATE TABLE erasures (
        erasure_id   text PRIMARY KEY,              -- era_<uuid>
        user_id      text,                          -- whose data; null once forgotten
        status       text NOT NULL,                 -- pending, done
        removed      jsonb NOT NULL DEFAULT '{}',   -- what was removed so far, counts per kind
        holder       text,                          -- the instance erasing it last
        lease_until  timestamptz NOT NULL DEFAULT now(), -- past it, another process takes over
        requested_at timestamptz NOT NULL DEFAULT now(),
        finished_at  timestamptz,
        forget_after timestamptz                    -- when user_id and the token cutoff go
      );
      CREATE UNIQUE INDEX erasures_pending_user ON erasures (user_id) WHERE status = 'pending';
      CREATE INDEX erasures_open ON erasures (status, lease_until);
      CREATE INDEX erasures_forget ON erasures (forget_after) WHERE user_id IS NOT NULL;
    `,
  },
  {
    id: '0016_run_state',
    sql: `
      -- A run's resumable state (packages/agent-runtime/src/run-state.ts): what it was asked
      -- (request: the run's settings, model key included, cleared when the run ends) and where
      -- it is (state: steps taken, events sent, tokens, the turn waiting for approvals).
      -- Status gains 'suspended' (waiting for approvals with no replica holding it). Rows of
      -- runs before this have neither and are never resumed.
      ALTER TABLE agent_runs ADD COLUMN request jsonb;
      ALTER TABLE agent_runs ADD COLUMN state jsonb;
      ALTER TABLE agent_runs ADD COLUMN background boolean NOT NULL DEFAULT false;
      CREATE INDEX agent_runs_open_idx ON agent_runs (status, started_at)
        WHERE status IN ('running', 'suspended');
    `,
  },
];

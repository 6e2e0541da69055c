import type { Database } from './database.js';

export interface Migration {
  /** Sortable and never renamed once released: `0001_refresh_tokens`. */
  readonly id: string;
  readonly sql: string;
}

/**
 * Every schema change, in order. Applied once each, in one transaction each, identically on
 * PGlite and PostgreSQL. Append only; never edit a released migration.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    id: '0001_refresh_tokens',
    sql: `
      CREATE TABLE refresh_tokens (
        token_hash   text PRIMARY KEY,            -- hex SHA-256 of the token; the token itself is never stored
        user_id      text NOT NULL,
        created_at   timestamptz NOT NULL DEFAULT now(),
        expires_at   timestamptz NOT NULL,
        revoked_at   timestamptz,
        last_used_at timestamptz
      );
      CREATE INDEX refresh_tokens_user_id_idx ON refresh_tokens (user_id);
    `,
  },
  {
    id: '0002_agent_sessions',
    sql: `
      CREATE TABLE agent_sessions (
        session_id  text PRIMARY KEY,                -- generated (sess_<uuid>) or chosen by the client
        user_id     text NOT NULL,                   -- owner, from the access token; others get 404
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now(),
        last_run_id text,                            -- the run a resumed stream attaches to
        state       jsonb NOT NULL DEFAULT '{}'      -- todo list and pending plan of the agent
      );
      CREATE INDEX agent_sessions_user_id_idx ON agent_sessions (user_id, updated_at);
      CREATE TABLE agent_messages (
        session_id text NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
        seq        integer NOT NULL,                 -- position in the conversation, from 1
        run_id     text NOT NULL,
        message    jsonb NOT NULL,                   -- one chat message: user, assistant (with tool calls) or tool
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (session_id, seq)
      );
      CREATE TABLE agent_runs (
        run_id     text PRIMARY KEY,
        session_id text NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
        user_id    text NOT NULL,
        mode       text NOT NULL,
        status     text NOT NULL,                    -- running, done, error, aborted
        error_code text,
        started_at timestamptz NOT NULL DEFAULT now(),
        ended_at   timestamptz
      );
      CREATE INDEX agent_runs_session_id_idx ON agent_runs (session_id, started_at);
    `,
  },
  {
    id: '0003_scheduled_tasks',
    sql: `
      CREATE TABLE scheduled_tasks (
        task_id     text PRIMARY KEY,                -- the web layer's task id
        user_id     text NOT NULL,
        task        jsonb NOT NULL,                  -- the task as last synced, defaults applied
        status      text NOT NULL,                   -- pending, awaiting_confirmation, running, completed, failed, expired, paused, removed
        next_run_at timestamptz,                     -- next occurrence while pending; null otherwise
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX scheduled_tasks_status_idx ON scheduled_tasks (status, next_run_at);
      CREATE TABLE scheduled_task_runs (
        task_id      text NOT NULL,
        scheduled_at timestamptz NOT NULL,           -- the occurrence instant: (task_id, scheduled_at) is the idempotency key
        user_id      text NOT NULL,
        status       text NOT NULL,                  -- awaiting_confirmation, confirmed, running, succeeded, failed, declined, expired
        attempts     integer NOT NULL DEFAULT 0,     -- agent executions started (more than 1 after a worker died mid-run)
        worker       text,                           -- instance holding the run's lease
        lease_until  timestamptz,                    -- a running run whose lease passed may be taken over
        expires_at   timestamptz,                    -- deadline of a confirmation
        output       text,
        error        text,
        notified_at  timestamptz,                    -- results delivered (set once)
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        finished_at  timestamptz,
        PRIMARY KEY (task_id, scheduled_at)
      );
      CREATE INDEX scheduled_task_runs_user_idx ON scheduled_task_runs (user_id, status);
    `,
  },
  {
    id: '0004_knowledge_bases',
    sql: `
      CREATE TABLE knowledge_bases (
        knowledge_base_id text PRIMARY KEY,          -- kb_<uuid>
        user_id           text NOT NULL,             -- owner, from the access token; others get 404
        name              text NOT NULL,
        description       text NOT NULL DEFAULT '',
        created_at        timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX knowledge_bases_user_id_idx ON knowledge_bases (user_id, created_at);
      CREATE TABLE knowledge_documents (
        document_id       text PRIMARY KEY,          -- doc_<uuid>
        knowledge_base_id text NOT NULL REFERENCES knowledge_bases (knowledge_base_id) ON DELETE CASCADE,
        user_id           text NOT NULL,             -- copied from the base: every query filters by owner
        name              text NOT NULL,
        type              text NOT NULL,             -- text, markdown
        content           text NOT NULL,             -- the source, read by the ingestion job
        status            text NOT NULL,             -- pending, ready, failed
        error             text,                      -- why ingestion failed (safe to show the owner)
        chunk_count       integer NOT NULL DEFAULT 0,
        created_at        timestamptz NOT NULL DEFAULT now(),
        updated_at        timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX knowledge_documents_base_idx ON knowledge_documents (knowledge_base_id, created_at);
      CREATE TABLE knowledge_chunks (
        document_id       text NOT NULL REFERENCES knowledge_documents (document_id) ON DELETE CASCADE,
        chunk_index       integer NOT NULL,
        knowledge_base_id text NOT NULL,
        user_id           text NOT NULL,
        content           text NOT NULL,
        tsv               tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
        PRIMARY KEY (document_id, chunk_index)
      );
      CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING gin (tsv);
      CREATE INDEX knowledge_chunks_base_idx ON knowledge_chunks (knowledge_base_id);
    `,
  },
  {
    id: '0005_knowledge_embeddings',
    sql: `
      -- real[] everywhere; prepareVectorSearch (vector.ts) turns it into a pgvector vector at
      -- start where the extension exists. Unit length, so a dot product is the cosine.
      ALTER TABLE knowledge_chunks ADD COLUMN embedding real[];
      ALTER TABLE knowledge_chunks ADD COLUMN embedding_model text;  -- EMBEDDINGS_MODEL that made it
      ALTER TABLE knowledge_chunks ADD COLUMN embedding_dims integer; -- its length: filtered without reading it
    `,
  },
  {
    id: '0006_memories',
    sql: `
      -- Long-term memory (packages/memory, docs/memory.md): one row per memory, so concurrent
      -- saves of one user on two replicas each write their own row, never a shared blob.
      CREATE TABLE memories (
        memory_id         text PRIMARY KEY,          -- mem_<uuid>
        user_id           text NOT NULL,             -- owner (the token's sub): every statement filters by it
        content           text NOT NULL,
        content_key       text NOT NULL,             -- hex SHA-256 of the normalized text: one row per text and user
        tags              jsonb NOT NULL DEFAULT '[]', -- array of strings
        source_session_id text,                      -- the session and run of the save that wrote the text
        source_run_id     text,
        created_at        timestamptz NOT NULL DEFAULT now(),
        updated_at        timestamptz NOT NULL DEFAULT now(),
        tsv               tsvector GENERATED ALWAYS AS
                            (to_tsvector('simple', content || ' ' || (tags)::text)) STORED,
        -- As knowledge_chunks: real[], turned into a pgvector vector by prepareVectorSearch.
        embedding         real[],
        embedding_model   text,
        embedding_dims    integer
      );
      CREATE UNIQUE INDEX memories_user_key_idx ON memories (user_id, content_key);
      CREATE INDEX memories_user_created_idx ON memories (user_id, created_at, memory_id);
      CREATE INDEX memories_tsv_idx ON memories USING gin (tsv);
    `,
  },
  {
    id: '0007_user_skills',
    sql: `
      CREATE TABLE user_skills (
        user_id      text NOT NULL,                 -- owner, from the access token; every query filters by it
        name         text NOT NULL,                 -- the skill's name (Agent Skills: a-z, 0-9, -)
        description  text NOT NULL,
        front_matter jsonb NOT NULL,                -- the validated front matter (license, metadata, ...)
        body         text NOT NULL,                 -- the instructions: SKILL.md after the front matter
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, name)
      );
      CREATE TABLE user_skill_files (
        user_id text NOT NULL,
        name    text NOT NULL,
        path    text NOT NULL,                      -- relative to the skill's folder; never has .. segments
        size    integer NOT NULL,
        content text NOT NULL,                      -- base64 (bytea is not in the store contract)
        PRIMARY KEY (user_id, name, path),
        FOREIGN KEY (user_id, name) REFERENCES user_skills (user_id, name) ON DELETE CASCADE
      );
    `,
  },
  {
    id: '0008_session_sandboxes',
    sql: `
      CREATE TABLE session_sandboxes (
        session_id   text PRIMARY KEY,              -- one sandbox per agent session
        user_id      text NOT NULL,                 -- owner, from the access token
        provider     text NOT NULL,                 -- bwrap | e2b | ...: which provider's id this is
        sandbox_id   text NOT NULL,                 -- the provider's id, to reconnect from any replica
        state        text NOT NULL,                 -- running | paused
        created_at   timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX session_sandboxes_idle ON session_sandboxes (state, last_used_at);
    `,
  },
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

/**
 * Brings the schema up to date. Safe to run from several replicas at once: a transaction-scoped
 * advisory lock (keyed by the current schema) serializes them, and each sees what the previous
 * one applied. Returns the ids it applied.
 */
export async function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.query(
      `SELECT pg_advisory_xact_lock(hashtext('agent-backend:migrations:' || current_schema()))`,
    );
    await tx.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        id         text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await tx.query<{ id: string }>('SELECT id FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.id));
    const done: string[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [migration.id]);
      done.push(migration.id);
    }
    return done;
  });
}

/**
 * Splits a migration into statements (the extended query protocol takes one at a time). Our
 * migrations keep `;` out of string literals and function bodies, which this relies on.
 */
function splitStatements(sql: string): string[] {
  return sql
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}

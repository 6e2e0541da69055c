import type { Migration } from './migration.js';

/**
 * Sign-in, sessions, scheduled tasks, knowledge, memories, skills and sandboxes: the first schema.
 */
export const MIGRATIONS_FROM_0001: readonly Migration[] = [
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
];

/**
 * Every table of the durable store (packages/store/src/migrations.ts) and what an export and an
 * erasure do with it. `tables.test.ts` compares this list with the migrated schema, so a new
 * table or a new column that names a user cannot be added without deciding here.
 */
export interface TablePlan {
  /** The columns that hold a user id of the service's tokens (empty: none). */
  readonly userColumns: readonly string[];
  /** Where its rows go in the export archive, or why they are not there. */
  readonly exported: string;
  /** What an erasure does with the user's rows. */
  readonly erased: string;
}

export const TABLE_PLANS: Readonly<Record<string, TablePlan>> = {
  refresh_tokens: {
    userColumns: ['user_id'],
    exported: 'tokens.jsonl: when each was issued, last used, expires, revoked (never the hash)',
    erased: 'deleted first: every refresh token fails at once',
  },
  token_cutoffs: {
    userColumns: ['user_id'],
    exported: 'not exported: the cutoff of their access tokens, no data of theirs',
    erased:
      'raised by the erasure (their access tokens fail everywhere within 2 s), then deleted ' +
      'once those tokens have expired (forget_after)',
  },
  agent_sessions: {
    userColumns: ['user_id'],
    exported: 'sessions.jsonl; their todo lists in todos.jsonl',
    erased: 'deleted in batches of sessions, with their messages, runs and approvals',
  },
  agent_messages: {
    userColumns: ['user_id'],
    exported: 'messages.jsonl',
    erased: 'with their session',
  },
  agent_runs: {
    userColumns: ['user_id'],
    exported: 'runs.jsonl, with each run’s token usage and model',
    erased: 'with their session, after their run logs (Redis)',
  },
  agent_approvals: {
    userColumns: ['user_id'],
    exported: 'approvals.jsonl',
    erased: 'with their session',
  },
  scheduled_tasks: {
    userColumns: ['user_id'],
    exported: 'scheduled-tasks.jsonl',
    erased: 'deleted after their schedules and queued jobs',
  },
  scheduled_task_runs: {
    userColumns: ['user_id'],
    exported: 'scheduled-task-runs.jsonl',
    erased: 'deleted',
  },
  knowledge_bases: {
    userColumns: ['user_id'],
    exported: 'knowledge-bases.jsonl',
    erased: 'deleted after their documents',
  },
  knowledge_documents: {
    userColumns: ['user_id'],
    exported:
      'knowledge-documents.jsonl, and each document as uploaded under knowledge/<base>/<document>/',
    erased: 'deleted after their chunks and queued ingestion jobs',
  },
  knowledge_chunks: {
    userColumns: ['user_id'],
    exported: 'not exported: derived from the documents (split and embedded)',
    erased: 'deleted',
  },
  memories: {
    userColumns: ['user_id'],
    exported: 'memories.jsonl (without embeddings, derived from the text)',
    erased: 'deleted',
  },
  user_skills: {
    userColumns: ['user_id'],
    exported: 'skills.jsonl, and each skill as a folder under skills/<name>/ with its SKILL.md',
    erased: 'deleted after their files',
  },
  user_skill_files: {
    userColumns: ['user_id'],
    exported: 'the files of skills/<name>/, decoded',
    erased: 'deleted',
  },
  session_sandboxes: {
    userColumns: ['user_id'],
    exported: 'sandboxes.jsonl (the sandboxes themselves are scratch space, not exported)',
    erased: 'each sandbox destroyed with its files at its provider, then the row deleted',
  },
  chat_inbox: {
    userColumns: [],
    exported:
      'not exported: messages of chat-platform users (chat:<platform>:<chat>), no token user',
    erased: 'untouched',
  },
  audit_log: {
    userColumns: ['user_id'],
    exported: 'not exported: the user reads their events with GET /api/me/audit',
    erased:
      'the events about the user deleted with their data; the erasure itself is recorded as ' +
      'user.data_erased with its erasure id and no user id',
  },
  erasures: {
    userColumns: ['user_id'],
    exported: 'not exported',
    erased:
      'the record of the erasure itself; its user_id is cleared with the token cutoff, leaving ' +
      'counts and times that name nobody',
  },
  schema_migrations: {
    userColumns: [],
    exported: 'not exported: the schema’s own',
    erased: 'untouched',
  },
};

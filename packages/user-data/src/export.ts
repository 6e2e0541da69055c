import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { stringify } from 'yaml';
import type { Presence } from '@agent-backend/presence';
import type { Database, Row } from '@agent-backend/store';
import { tarEnd, tarEntry, tarFileEntry } from './tar.js';

/** Rows read per query while exporting. */
const PAGE = 1000;

/** What the archive's `manifest.json` says. */
export interface ExportManifest {
  readonly format: 'agent-backend-user-export/1';
  readonly user_id: string;
  readonly exported_at: string;
  /** Lines of each JSON-lines file, by file name. */
  readonly files: Record<string, number>;
  /** Files stored as uploaded: knowledge documents and skill files. */
  readonly uploads: number;
  /** What the service does not keep, so no archive holds it. */
  readonly not_stored: readonly string[];
}

const NOT_STORED = [
  'MCP server configurations and SaaS account credentials: sent with each invoke, never stored',
  'model API keys: sent with each invoke, never stored',
  'sandbox files: scratch space of a session, not exported',
];

/** The JSON-lines files of an archive, in the order they are written. */
export const JSONL_FILES = [
  'sessions.jsonl',
  'todos.jsonl',
  'messages.jsonl',
  'approvals.jsonl',
  'scheduled-tasks.jsonl',
  'scheduled-task-runs.jsonl',
  'knowledge-bases.jsonl',
  'memories.jsonl',
  'sandboxes.jsonl',
  'runs.jsonl',
  'tokens.jsonl',
  'knowledge-documents.jsonl',
  'skills.jsonl',
  'nodes.jsonl',
] as const;

/** A path segment from a user-chosen name: no separators, no control characters, never `..`. */
function segment(name: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced.
  const safe = name.replace(/[/\\\x00-\x1f\x7f]/g, '_');
  return safe === '' || safe === '.' || safe === '..' ? '_' : safe;
}

/** Pages of the user's rows of `table`, in the order of `keys` (a keyset, never OFFSET). */
async function* pages(
  db: Database,
  userId: string,
  table: string,
  columns: string,
  keys: readonly string[],
): AsyncGenerator<Row[]> {
  let after: unknown[] | undefined;
  for (;;) {
    const condition = after
      ? ` AND (${keys.join(', ')}) > (${keys.map((_, i) => `$${i + 3}`).join(', ')})`
      : '';
    const { rows } = await db.query(
      `SELECT ${columns} FROM ${table} WHERE user_id = $1${condition}
       ORDER BY ${keys.join(', ')} LIMIT $2`,
      [userId, PAGE, ...(after ?? [])],
    );
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE) return;
    const last = rows.at(-1)!;
    after = keys.map((key) => last[key]);
  }
}

/** JSON lines of one kind, spooled to a file of their own until the archive takes them. */
class Spool {
  readonly counts: Record<string, number> = {};
  constructor(private readonly dir: string) {}

  path(file: string): string {
    return join(this.dir, file);
  }

  async write(file: string, values: readonly unknown[]): Promise<void> {
    this.counts[file] ??= 0;
    if (values.length === 0) return appendFile(this.path(file), '');
    this.counts[file] += values.length;
    await appendFile(this.path(file), values.map((v) => JSON.stringify(v) + '\n').join(''));
  }
}

/** bigint columns: strings from PostgreSQL, numbers from PGlite; numbers in the archive. */
const num = (value: unknown) => (value === null || value === undefined ? value : Number(value));

/**
 * Everything `userId` owns as one tar archive, streamed: a JSON-lines file per kind of data
 * (`sessions.jsonl`, `messages.jsonl`, ...; tables.ts says which table goes where), each
 * knowledge document as uploaded under `knowledge/<base id>/<document id>/<name>`, each skill
 * as a folder `skills/<name>/` with its SKILL.md and files, and `manifest.json` last with the
 * count of each file. Rows are read a page at a time and each kind is spooled to a temporary
 * file, so memory stays flat whatever the user holds. Secrets (refresh-token hashes, embeddings
 * aside) are never in it.
 */
export function exportUser(deps: { db: Database; presence: Presence }, userId: string): Readable {
  return Readable.from(archive(deps, userId), { objectMode: false });
}

async function* archive(
  { db, presence }: { db: Database; presence: Presence },
  userId: string,
): AsyncGenerator<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'user-export-'));
  const spool = new Spool(dir);
  let uploads = 0;
  try {
    // Every kind has its file, empty when the user has none of it.
    for (const file of JSONL_FILES) await spool.write(file, []);
    for await (const rows of pages(
      db,
      userId,
      'agent_sessions',
      'session_id, title, created_at, updated_at, last_run_id, state',
      ['session_id'],
    )) {
      await spool.write(
        'sessions.jsonl',
        rows.map(({ state, ...session }) => {
          const plan = (state as { pendingPlan?: unknown } | null)?.pendingPlan;
          return plan === undefined ? session : { ...session, pending_plan: plan };
        }),
      );
      await spool.write(
        'todos.jsonl',
        rows.flatMap((row) => {
          const todos = (row.state as { todos?: unknown } | null)?.todos;
          return Array.isArray(todos)
            ? todos.map((todo: object) => ({ session_id: row.session_id, ...todo }))
            : [];
        }),
      );
    }
    const simple: Array<[file: string, table: string, columns: string, keys: string[]]> = [
      [
        'messages.jsonl',
        'agent_messages',
        'session_id, seq, run_id, message, created_at',
        ['session_id', 'seq'],
      ],
      [
        'approvals.jsonl',
        'agent_approvals',
        'session_id, request_id, run_id, tool_call_id, tool_name, outcome, tool_args, message, created_at',
        ['session_id', 'request_id'],
      ],
      [
        'scheduled-tasks.jsonl',
        'scheduled_tasks',
        'task_id, task, status, next_run_at, created_at, updated_at',
        ['task_id'],
      ],
      [
        'scheduled-task-runs.jsonl',
        'scheduled_task_runs',
        'task_id, scheduled_at, status, attempts, expires_at, output, error, notified_at, created_at, updated_at, finished_at',
        ['task_id', 'scheduled_at'],
      ],
      [
        'knowledge-bases.jsonl',
        'knowledge_bases',
        'knowledge_base_id, name, description, created_at',
        ['knowledge_base_id'],
      ],
      [
        'memories.jsonl',
        'memories',
        'memory_id, content, tags, source_session_id, source_run_id, created_at, updated_at',
        ['memory_id'],
      ],
      [
        'sandboxes.jsonl',
        'session_sandboxes',
        'session_id, provider, sandbox_id, state, created_at, last_used_at',
        ['session_id'],
      ],
    ];
    for (const [file, table, columns, keys] of simple) {
      for await (const rows of pages(db, userId, table, columns, keys))
        await spool.write(file, rows);
    }
    for await (const rows of pages(
      db,
      userId,
      'agent_runs',
      'run_id, session_id, mode, status, error_code, started_at, ended_at, prompt_tokens, completion_tokens, model',
      ['run_id'],
    )) {
      await spool.write(
        'runs.jsonl',
        rows.map((r) => ({
          ...r,
          prompt_tokens: num(r.prompt_tokens),
          completion_tokens: num(r.completion_tokens),
        })),
      );
    }
    for await (const rows of pages(
      db,
      userId,
      'refresh_tokens',
      'token_hash, created_at, expires_at, revoked_at, last_used_at',
      ['token_hash'],
    )) {
      await spool.write(
        'tokens.jsonl',
        rows.map(({ token_hash: _hash, ...token }) => token),
      );
    }
    for await (const rows of pages(
      db,
      userId,
      'knowledge_documents',
      'document_id, knowledge_base_id, name, type, content, status, error, chunk_count, created_at, updated_at',
      ['document_id'],
    )) {
      const documents = [];
      for (const { content, ...doc } of rows) {
        const file = `knowledge/${segment(String(doc.knowledge_base_id))}/${segment(String(doc.document_id))}/${segment(String(doc.name))}`;
        yield* tarEntry(file, Buffer.from(String(content), 'utf8'), doc.created_at as Date);
        uploads += 1;
        documents.push({ ...doc, file });
      }
      await spool.write('knowledge-documents.jsonl', documents);
    }
    for await (const rows of pages(
      db,
      userId,
      'user_skills',
      'name, description, front_matter, body, created_at, updated_at',
      ['name'],
    )) {
      await spool.write(
        'skills.jsonl',
        rows.map(({ body: _body, ...skill }) => skill),
      );
      for (const skill of rows) {
        const front = {
          name: skill.name,
          description: skill.description,
          ...(skill.front_matter as object),
        };
        const markdown = `---\n${stringify(front)}---\n${String(skill.body)}`;
        yield* tarEntry(
          `skills/${segment(String(skill.name))}/SKILL.md`,
          Buffer.from(markdown),
          skill.updated_at as Date,
        );
        uploads += 1;
      }
    }
    for await (const rows of pages(db, userId, 'user_skill_files', 'name, path, content', [
      'name',
      'path',
    ])) {
      for (const file of rows) {
        const path = String(file.path).split('/').map(segment).join('/');
        yield* tarEntry(
          `skills/${segment(String(file.name))}/${path}`,
          Buffer.from(String(file.content), 'base64'),
        );
        uploads += 1;
      }
    }
    await spool.write('nodes.jsonl', await presence.listNodes(userId));

    for (const file of Object.keys(spool.counts)) yield* tarFileEntry(file, spool.path(file));
    const manifest: ExportManifest = {
      format: 'agent-backend-user-export/1',
      user_id: userId,
      exported_at: new Date().toISOString(),
      files: spool.counts,
      uploads,
      not_stored: NOT_STORED,
    };
    yield* tarEntry('manifest.json', Buffer.from(JSON.stringify(manifest, null, 2) + '\n'));
    yield tarEnd();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

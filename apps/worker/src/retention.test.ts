import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireSessionLease, deleteSessions } from '@agent-backend/agent-runtime';
import { createMemoryEphemeralStore } from '@agent-backend/ephemeral';
import {
  AuditLog,
  createPgliteDatabase,
  createPostgresDatabase,
  migrate,
  type Database,
} from '@agent-backend/store';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { sweepRetention, type RetentionSettings } from './retention.js';

const ago = (days: number) => new Date(Date.now() - days * 86_400_000);

/** A session with a message, a run, an approval and a sandbox row, last active `days` ago. */
async function seedSession(db: Database, userId: string, sessionId: string, days: number) {
  const at = ago(days);
  await db.query(
    `INSERT INTO agent_sessions (user_id, session_id, created_at, updated_at) VALUES ($1, $2, $3, $3)`,
    [userId, sessionId, at],
  );
  const runId = `run-${userId}-${sessionId}`;
  await db.query(
    `INSERT INTO agent_runs (run_id, session_id, user_id, mode, status, started_at)
     VALUES ($1, $2, $3, 'agent', 'done', $4)`,
    [runId, sessionId, userId, at],
  );
  await db.query(
    `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message) VALUES ($1, $2, 1, $3, $4)`,
    [userId, sessionId, runId, JSON.stringify({ role: 'user', content: 'hello' })],
  );
  await db.query(
    `INSERT INTO agent_approvals (user_id, session_id, request_id, run_id, tool_call_id, tool_name, outcome)
     VALUES ($1, $2, 'apr', $3, 'call', 'tool', 'approved')`,
    [userId, sessionId, runId],
  );
  await db.query(
    `INSERT INTO session_sandboxes (session_id, user_id, provider, sandbox_id, state)
     VALUES ($1, $2, 'bwrap', $3, 'paused')`,
    [sessionId, userId, `sbx-${sessionId}`],
  );
  return runId;
}

const count = async (db: Database, table: string, userId: string, sessionId: string) =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1 AND session_id = $2`,
      [userId, sessionId],
    )
  ).rows[0]!.n;

const SESSION_TABLES = [
  'agent_sessions',
  'agent_messages',
  'agent_runs',
  'agent_approvals',
  'session_sandboxes',
];

const settings = (days: Partial<RetentionSettings['days']>): RetentionSettings => ({
  days: {
    sessions: 0,
    task_runs: 0,
    knowledge_documents: 0,
    memories: 0,
    audit_events: 0,
    ...days,
  },
  batchSize: 2,
  pauseMs: 1,
});

const engines: [string, () => Promise<{ db: Database; close(): Promise<void> }>][] = [
  [
    'PGlite',
    async () => {
      const db = await createPgliteDatabase({ vector: false });
      return { db, close: () => db.close() };
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const schema: TestSchema = await createTestSchema('retention');
      const db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema });
      return {
        db,
        close: async () => {
          await db.close();
          await schema.drop();
        },
      };
    },
  ],
];

describe.each(engines)('retention sweep on %s', (_name, open) => {
  let db: Database;
  let close: () => Promise<void>;
  const ephemeral = createMemoryEphemeralStore();

  beforeAll(async () => {
    ({ db, close } = await open());
    await migrate(db);
  });
  afterAll(async () => {
    await ephemeral.close();
    await close();
  });

  it('deletes every row of expired sessions, in batches, and keeps live ones', async () => {
    for (const id of ['old-1', 'old-2', 'old-3', 'old-4', 'old-5'])
      await seedSession(db, 'u1', id, 40);
    await seedSession(db, 'u1', 'fresh', 2);
    const waiting = await seedSession(db, 'u1', 'waiting-approval', 40);
    await db.query(`UPDATE agent_runs SET status = 'running' WHERE run_id = $1`, [waiting]);
    await seedSession(db, 'u1', 'leased', 40);
    const lease = await acquireSessionLease(ephemeral, 'u1', 'leased', 'run-live');
    await seedSession(db, 'u2', 'old-1', 40); // another user's session of the same id, expired too

    const reported: number[] = [];
    const removed = await sweepRetention(
      { db, ephemeral, removed: (_kind, n) => reported.push(n) },
      settings({ sessions: 30 }),
    );
    expect(removed.sessions).toBe(6);
    expect(reported.reduce((a, b) => a + b, 0)).toBe(6);
    for (const table of SESSION_TABLES) {
      for (const id of ['old-1', 'old-2', 'old-3', 'old-4', 'old-5'])
        expect(await count(db, table, 'u1', id)).toBe(0);
      expect(await count(db, table, 'u2', 'old-1')).toBe(0);
      for (const id of ['fresh', 'waiting-approval', 'leased'])
        expect(await count(db, table, 'u1', id)).toBe(1);
    }
    await lease?.release();
  });

  it('keeps a session used between its selection and its delete', async () => {
    await seedSession(db, 'u3', 'touched', 40);
    await seedSession(db, 'u3', 'idle', 40);
    // Selected as idle, then a run starts on it before the delete runs.
    await db.query(
      `UPDATE agent_sessions SET updated_at = now() WHERE user_id = 'u3' AND session_id = 'touched'`,
    );
    const keys = [
      { userId: 'u3', sessionId: 'touched' },
      { userId: 'u3', sessionId: 'idle' },
    ];
    expect((await deleteSessions(db, keys, ago(30))).sessions).toBe(1);
    expect(await count(db, 'agent_messages', 'u3', 'touched')).toBe(1);
    expect(await count(db, 'agent_messages', 'u3', 'idle')).toBe(0);
  });

  it('deletes finished task runs, untouched documents, memories and audit events past their days', async () => {
    const taskRun = `INSERT INTO scheduled_task_runs (task_id, scheduled_at, user_id, status, finished_at)
                     VALUES ($1, $2, 'u4', $3, $4)`;
    await db.query(taskRun, ['t1', ago(100), 'succeeded', ago(100)]);
    await db.query(taskRun, ['t1', ago(99), 'failed', ago(99)]);
    await db.query(taskRun, ['t1', ago(98), 'running', null]);
    await db.query(taskRun, ['t1', ago(1), 'succeeded', ago(1)]);
    await db.query(
      `INSERT INTO knowledge_bases (knowledge_base_id, user_id, name) VALUES ('kb1', 'u4', 'kb')`,
    );
    const doc = `INSERT INTO knowledge_documents (document_id, knowledge_base_id, user_id, name, type, content, status, updated_at)
                 VALUES ($1, 'kb1', 'u4', $1, 'text', 'x', $2, $3)`;
    await db.query(doc, ['doc-old', 'ready', ago(200)]);
    await db.query(doc, ['doc-new', 'ready', ago(1)]);
    await db.query(
      `INSERT INTO knowledge_chunks (document_id, chunk_index, knowledge_base_id, user_id, content)
       VALUES ('doc-old', 0, 'kb1', 'u4', 'x'), ('doc-new', 0, 'kb1', 'u4', 'x')`,
    );
    await db.query(
      `INSERT INTO memories (memory_id, user_id, content, content_key, updated_at)
       VALUES ('m-old', 'u4', 'likes tea', 'k1', $1)`,
      [ago(400)],
    );
    await new AuditLog(db).record({ action: 'token.issued', userId: 'u4', actor: 'cli' });
    await db.query(
      `ALTER TABLE audit_log ALTER COLUMN occurred_at SET DEFAULT now() - interval '500 days'`,
    );
    await new AuditLog(db).record({ action: 'token.issued', userId: 'u4', actor: 'cli' });
    await db.query(`ALTER TABLE audit_log ALTER COLUMN occurred_at SET DEFAULT now()`);

    // Memories are kept by default (0 days).
    const removed = await sweepRetention(
      { db, ephemeral },
      settings({ task_runs: 90, knowledge_documents: 180, audit_events: 365 }),
    );
    expect(removed).toMatchObject({
      task_runs: 2,
      knowledge_documents: 1,
      memories: 0,
      audit_events: 1,
    });
    const ids = async (sql: string) => (await db.query<{ id: string }>(sql)).rows.map((r) => r.id);
    expect(
      await ids(
        `SELECT status AS id FROM scheduled_task_runs WHERE task_id = 't1' ORDER BY status`,
      ),
    ).toEqual(['running', 'succeeded']);
    expect(await ids(`SELECT document_id AS id FROM knowledge_chunks`)).toEqual(['doc-new']);
    expect(await ids(`SELECT memory_id AS id FROM memories`)).toEqual(['m-old']);
    expect((await new AuditLog(db).page({ userId: 'u4', limit: 10 })).length).toBe(1);

    const memories = await sweepRetention({ db, ephemeral }, settings({ memories: 365 }));
    expect(memories.memories).toBe(1);
  });
});

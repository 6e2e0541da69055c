/**
 * The retention sweep with live traffic: p50 and p99 of live conversation requests while the
 * sweep deletes expired sessions (and their messages), against the same requests with no sweep,
 * measured in the same run on the same PostgreSQL schema.
 *
 *   node --import tsx bench/retention-sweep.ts
 *
 * Env: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), SESSIONS (expired
 * sessions, default 2000), MESSAGES_PER_SESSION (default 50), LIVE_USERS (default 20),
 * BATCH (RETENTION_BATCH_SIZE, default 500), CONCURRENCY (live request loops, default 4).
 *
 * A live request is what a client of a live session does: append a message (INSERT and the
 * session's `updated_at`), read the session list page, read the session's last messages
 * (`ConversationRepository`). The baseline phase runs them as long as the sweep phase lasts.
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ConversationRepository } from '../packages/agent-runtime/src/index.js';
import { createMemoryEphemeralStore } from '../packages/ephemeral/src/index.js';
import { createPostgresDatabase, migrate, type Database } from '../packages/store/src/index.js';
import { createTestSchema } from '../packages/testing/src/index.js';
import { sweepRetention } from '@agent-backend/worker';

process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const sessions = Number(process.env.SESSIONS ?? 2_000);
const perSession = Number(process.env.MESSAGES_PER_SESSION ?? 50);
const liveUsers = Number(process.env.LIVE_USERS ?? 20);
const batchSize = Number(process.env.BATCH ?? 500);
const concurrency = Number(process.env.CONCURRENCY ?? 4);

async function seed(db: Database): Promise<void> {
  // Expired: 40 days idle, spread over 100 users.
  await db.query(
    `INSERT INTO agent_sessions (user_id, session_id, created_at, updated_at)
     SELECT 'old-' || (i % 100), 'sess-' || i, now() - interval '41 days', now() - interval '40 days'
       FROM generate_series(1, $1) AS i`,
    [sessions],
  );
  await db.query(
    `INSERT INTO agent_runs (run_id, session_id, user_id, mode, status)
     SELECT 'run-' || i, 'sess-' || i, 'old-' || (i % 100), 'agent', 'done'
       FROM generate_series(1, $1) AS i`,
    [sessions],
  );
  await db.query(
    `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
     SELECT 'old-' || (i % 100), 'sess-' || i, m, 'run-' || i,
            jsonb_build_object('role', 'user', 'content', repeat('x', 200))
       FROM generate_series(1, $1) AS i, generate_series(1, $2) AS m`,
    [sessions, perSession],
  );
  // Live: one session per live user, with a few messages.
  await db.query(
    `INSERT INTO agent_sessions (user_id, session_id) SELECT 'live-' || i, 'live' FROM generate_series(1, $1) AS i`,
    [liveUsers],
  );
  await db.query(`ANALYZE`);
}

let seq = 1_000;
async function liveRequest(db: Database, conversations: ConversationRepository): Promise<number> {
  const userId = `live-${1 + Math.floor(Math.random() * liveUsers)}`;
  const t0 = performance.now();
  await db.query(
    `WITH m AS (
       INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
       VALUES ($1, 'live', $2, 'run-live', $3))
     UPDATE agent_sessions SET updated_at = now() WHERE user_id = $1 AND session_id = 'live'`,
    [userId, seq++, JSON.stringify({ role: 'user', content: 'hello' })],
  );
  await conversations.list(userId, { limit: 20 });
  await conversations.messages({ userId, sessionId: 'live' }, { limit: 50 });
  return performance.now() - t0;
}

/** Live requests from `concurrency` loops until `until` resolves; their latencies in ms. */
async function traffic(db: Database, until: Promise<unknown>): Promise<number[]> {
  const conversations = new ConversationRepository(db);
  const latencies: number[] = [];
  let done = false;
  void until.then(() => (done = true));
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!done) latencies.push(await liveRequest(db, conversations));
    }),
  );
  return latencies;
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
};
const ms = (v: number) => `${v.toFixed(1)} ms`;

async function main(): Promise<void> {
  const schema = await createTestSchema('bench_retention');
  const db = await createPostgresDatabase({
    url: process.env.DATABASE_URL!,
    schema: schema.schema,
  });
  const ephemeral = createMemoryEphemeralStore();
  try {
    await migrate(db);
    const seeded = performance.now();
    await seed(db);
    console.log(
      `seeded ${sessions} expired sessions x ${perSession} messages (${sessions * perSession} messages) in ${((performance.now() - seeded) / 1000).toFixed(1)} s; ${cpus().length} CPUs`,
    );

    const sweepStart = performance.now();
    let sweepMs = 0;
    const sweep = sweepRetention(
      { db, ephemeral },
      {
        days: { sessions: 30, task_runs: 0, knowledge_documents: 0, memories: 0, audit_events: 0 },
        batchSize,
      },
    ).then((removed) => {
      sweepMs = performance.now() - sweepStart;
      return removed;
    });
    const during = await traffic(db, sweep);
    const removed = await sweep;
    // The baseline: the same traffic for as long, nothing else running.
    const without = await traffic(db, new Promise((r) => setTimeout(r, sweepMs)));

    const left = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM agent_messages WHERE user_id LIKE 'old-%'`,
    );
    console.log(
      `sweep: ${removed.sessions} sessions (${removed.sessions * perSession} messages) in ${ms(sweepMs)} (${Math.round((removed.sessions * perSession) / (sweepMs / 1000))} messages/s), batches of ${batchSize}; messages left: ${left.rows[0]!.n}`,
    );
    console.log('| live requests | n | p50 | p99 |');
    console.log('|---|---:|---:|---:|');
    console.log(
      `| without sweep | ${without.length} | ${ms(pct(without, 50))} | ${ms(pct(without, 99))} |`,
    );
    console.log(
      `| during sweep | ${during.length} | ${ms(pct(during, 50))} | ${ms(pct(during, 99))} |`,
    );
    console.log(
      `p99 during / without: ${(pct(during, 99) / pct(without, 99)).toFixed(2)}x; p50: ${(pct(during, 50) / pct(without, 50)).toFixed(2)}x`,
    );
  } finally {
    await ephemeral.close();
    await db.close();
    await schema.drop();
  }
}

await main();

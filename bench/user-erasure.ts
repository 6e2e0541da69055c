/**
 * Erasing a user with 10,000 sessions and 100,000 messages (`eraseUser`, packages/user-data)
 * on PostgreSQL: how long it takes per batch size, and what it does to another user's live
 * traffic meanwhile. The live probe (one connection, back to back: append a message to one of
 * its sessions and read the session's last 20 messages) runs alone first, then during the
 * erasure, in the same run, so the ratio of its p50/p99 says what the erasure costs others.
 * Lock waits: `pg_locks` is sampled every 20 ms during the erasure for locks not granted.
 *
 *   node --import tsx bench/user-erasure.ts
 *
 * Env: SESSIONS (default 10000), MESSAGES (per session, default 10), BATCHES (default
 * 100,500,2000), PROBE_MS (baseline length, default 3000), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test). The Redis-side ports are the in-process ones (the
 * store is what is measured); the 2.5 s wait after the token cutoff is left out. Each batch size
 * gets a fresh copy of the data in a fresh schema, dropped at the end. Results:
 * docs/BENCHMARKS.md.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { RevocationList } from '../packages/auth/src/index.js';
import { createMemoryEphemeralStore } from '../packages/ephemeral/src/index.js';
import { createMemoryJobQueue } from '../packages/jobs/src/index.js';
import { createMemoryLimits } from '../packages/limits/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { createMemoryPresence } from '../packages/presence/src/index.js';
import { createMemoryRunLog } from '../packages/run-log/src/index.js';
import { createPostgresDatabase, migrate } from '../packages/store/src/index.js';
import { eraseUser } from '../packages/user-data/src/index.js';

const URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SESSIONS = Number(process.env.SESSIONS ?? 10_000);
const MESSAGES = Number(process.env.MESSAGES ?? 10);
const BATCHES = (process.env.BATCHES ?? '100,500,2000').split(',').map(Number);
const PROBE_MS = Number(process.env.PROBE_MS ?? 3_000);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (n: number) => n.toFixed(2);

async function seed(client: pg.Client): Promise<void> {
  await client.query(
    `INSERT INTO agent_sessions (user_id, session_id)
     SELECT 'gone', 's' || i FROM generate_series(1, $1) i`,
    [SESSIONS],
  );
  await client.query(
    `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
     SELECT 'gone', 's' || i, m, 'r' || i, '{"role":"user","content":"a message of some length, as people write them"}'
     FROM generate_series(1, $1) i, generate_series(1, $2) m`,
    [SESSIONS, MESSAGES],
  );
  await client.query(
    `INSERT INTO agent_runs (run_id, user_id, session_id, mode, status)
     SELECT 'r' || i, 'gone', 's' || i, 'agent', 'done' FROM generate_series(1, $1) i`,
    [SESSIONS],
  );
  await client.query(
    `INSERT INTO agent_sessions (user_id, session_id)
     SELECT 'live', 'l' || i FROM generate_series(1, 100) i`,
  );
  await client.query('ANALYZE');
}

/** The other user's traffic, back to back until `stop` resolves; latencies in ms. */
async function probe(client: pg.Client, stop: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void stop.then(() => (done = true));
  let seq = (
    await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM agent_messages WHERE user_id = 'live'`,
    )
  ).rows[0]!.n;
  while (!done) {
    const started = performance.now();
    seq += 1;
    await client.query(
      `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
       VALUES ('live', 'l1', $1, 'rl', '{"role":"user","content":"hi"}')`,
      [seq],
    );
    await client.query(
      `SELECT message FROM agent_messages WHERE user_id = 'live' AND session_id = 'l1'
       ORDER BY seq DESC LIMIT 20`,
    );
    latencies.push(performance.now() - started);
  }
  return latencies.sort((a, b) => a - b);
}

const logger = createLogger({ level: 'warn' });
console.log(
  `user erasure: ${SESSIONS} sessions, ${SESSIONS * MESSAGES} messages, ${SESSIONS} runs; ` +
    `${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}`,
);
for (const batchSize of BATCHES) {
  const schema = `bench_erase_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  const db = await createPostgresDatabase({ url: URL, schema, max: 4 });
  try {
    await migrate(db);
    const client = new pg.Client({ connectionString: URL, options: `-c search_path=${schema}` });
    await client.connect();
    await seed(client);
    const baseline = await probe(client, new Promise((r) => setTimeout(r, PROBE_MS)));

    const sampler = new pg.Client({ connectionString: URL });
    await sampler.connect();
    let samples = 0;
    let waiting = 0;
    let maxWaiting = 0;
    let sampling = true;
    const sampled = (async () => {
      while (sampling) {
        const { rows } = await sampler.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`,
        );
        samples += 1;
        if (rows[0]!.n > 0) waiting += 1;
        maxWaiting = Math.max(maxWaiting, rows[0]!.n);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const started = performance.now();
    const erasure = eraseUser(
      {
        db,
        ephemeral: createMemoryEphemeralStore(),
        presence: createMemoryPresence(),
        limits: createMemoryLimits({ rules: {} }),
        runLog: createMemoryRunLog(),
        jobs: createMemoryJobQueue(),
        revokeAccessTokens: (userId) => new RevocationList(db).revokeUser(userId),
        sandboxProviders: [],
        logger,
        instanceId: 'bench',
      },
      { batchSize, revocationWaitMs: 0 },
      'gone',
    );
    const during = await probe(client, erasure);
    const record = await erasure;
    const elapsed = performance.now() - started;
    sampling = false;
    await sampled;
    await sampler.end();
    await client.end();
    const p = (sorted: number[]) =>
      `p50 ${ms(quantile(sorted, 0.5))} p99 ${ms(quantile(sorted, 0.99))}`;
    console.log(
      `batch ${batchSize}: erased in ${(elapsed / 1000).toFixed(2)} s ` +
        `(${record.removed.sessions} sessions, ${record.removed.messages} messages, ${record.removed.runs} runs); ` +
        `lock waits seen in ${waiting}/${samples} samples (at most ${maxWaiting}); ` +
        `live probe alone ${p(baseline)} ms (${baseline.length}), during ${p(during)} ms (${during.length}), ` +
        `p99 ratio ${(quantile(during, 0.99) / quantile(baseline, 0.99)).toFixed(2)}x`,
    );
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}

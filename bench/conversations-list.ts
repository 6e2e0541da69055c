/**
 * The conversations API at scale on PostgreSQL: `GET /api/agent/sessions` for a user with
 * 10,000 sessions and `GET /api/agent/sessions/:id/messages` for a session of 5,000 messages,
 * p50/p99 through a real api process (auth, validation, SQL, JSON), against baselines measured
 * in the same run: the same requests for a user with 10 sessions and a session of 10 messages.
 * Then EXPLAIN (ANALYZE, BUFFERS) of the statements the repository sends for them (captured
 * from `ConversationRepository`, so the plans are those of the code, not of a copy of its SQL).
 *
 *   pnpm build && node --import tsx bench/conversations-list.ts
 *
 * Data (generated with SQL in a fresh schema, then VACUUM ANALYZE): user `big` has SESSIONS
 * sessions, user `small` 10, and OTHERS other users 500 sessions each (rows the index must skip);
 * every one of these sessions has one run and two messages (user, assistant). User `reader` has
 * a session `long` of MESSAGES messages and a session `short` of 10, in turns of four (user;
 * assistant calling a tool; the tool's result, with a stored approval every other turn;
 * assistant text). Requests are sequential (one client), after WARMUP requests of each kind,
 * in ROUNDS rounds whose order rotates so drift on a shared machine hits every kind alike.
 * Deep pages: the sessions page after the first SESSIONS/2 sessions and the messages page at
 * MESSAGES - 100, with the cursors the API handed out. Also the sessions of `reader`, whose
 * page counts the MESSAGES messages of `long` (`message_count`).
 *
 * Env: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), REDIS_URL (default
 * redis://127.0.0.1:6379), SESSIONS (default 10000), MESSAGES (default 5000), OTHERS (default
 * 20), REQUESTS (default 300 per kind), ROUNDS (default 6), WARMUP (default 20). Results:
 * docs/BENCHMARKS.md.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import jwt from 'jsonwebtoken';
import pg from 'pg';
import type { MessageList, SessionList } from '@agent-backend/protocol';
import { ConversationRepository } from '../packages/agent-runtime/src/index.js';
import { createPostgresDatabase, type Database } from '../packages/store/src/index.js';
import { createTestSchema, startServiceProcess } from '../packages/testing/src/index.js';
import { machineLine } from './support/processes.js';

process.env.REDIS_URL ??= 'redis://127.0.0.1:6379';
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const SESSIONS = num('SESSIONS', 10_000);
const MESSAGES = num('MESSAGES', 5_000);
const OTHERS = num('OTHERS', 20);
const REQUESTS = num('REQUESTS', 300);
const ROUNDS = num('ROUNDS', 6);
const WARMUP = num('WARMUP', 20);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

/** Sessions of `user` named `<prefix>-<n>`, one run and two messages each, older n first. */
const SESSIONS_SQL = `
  WITH s AS (
    INSERT INTO agent_sessions (user_id, session_id, title, created_at, updated_at, last_run_id)
    SELECT $1, $2 || '-' || n, 'Conversation ' || n,
           now() - interval '1 second' * ($3 - n) - interval '1 day',
           now() - interval '1 second' * ($3 - n), 'run-' || $2 || '-' || n
      FROM generate_series(1, $3) n
    RETURNING user_id, session_id, last_run_id, updated_at
  ), r AS (
    INSERT INTO agent_runs (run_id, session_id, user_id, mode, status, started_at, ended_at, model)
    SELECT last_run_id, session_id, user_id, 'agent', 'done', updated_at, updated_at, 'bench'
      FROM s
  )
  INSERT INTO agent_messages (user_id, session_id, seq, run_id, message, created_at)
  SELECT user_id, session_id, k, last_run_id,
         CASE k WHEN 1 THEN jsonb_build_object('role', 'user', 'content', 'Question about ' || session_id)
                ELSE jsonb_build_object('role', 'assistant', 'content', 'An answer of a few words.') END,
         updated_at
    FROM s, generate_series(1, 2) k`;

/** A session of `count` messages in turns of four; every other turn's call was approved. */
const CONVERSATION_SQL = `
  WITH s AS (
    INSERT INTO agent_sessions (user_id, session_id, title, last_run_id)
    VALUES ($1, $2, $2, 'run-' || $2 || '-' || (($3 - 1) / 4 + 1))
  ), r AS (
    INSERT INTO agent_runs (run_id, session_id, user_id, mode, status, started_at, ended_at, model)
    SELECT 'run-' || $2 || '-' || t, $2, $1, 'agent', 'done', now(), now(), 'bench'
      FROM generate_series(1, ($3 - 1) / 4 + 1) t
  ), a AS (
    INSERT INTO agent_approvals (user_id, session_id, request_id, run_id, tool_call_id, tool_name, outcome)
    SELECT $1, $2, 'apr-' || t, 'run-' || $2 || '-' || t, 'call-' || t, 'write_todos', 'approved'
      FROM generate_series(1, ($3 - 1) / 4 + 1, 2) t
  )
  INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
  SELECT $1, $2, seq, 'run-' || $2 || '-' || ((seq - 1) / 4 + 1),
         CASE (seq - 1) % 4
           WHEN 0 THEN jsonb_build_object('role', 'user', 'content', 'Step ' || seq || ' please')
           WHEN 1 THEN jsonb_build_object('role', 'assistant', 'content', 'On it.', 'tool_calls',
             jsonb_build_array(jsonb_build_object('id', 'call-' || ((seq - 1) / 4 + 1), 'type', 'function',
               'function', jsonb_build_object('name', 'write_todos', 'arguments', '{"todos":[]}'))))
           WHEN 2 THEN jsonb_build_object('role', 'tool', 'tool_call_id', 'call-' || ((seq - 1) / 4 + 1),
             'content', 'Todos updated')
           ELSE jsonb_build_object('role', 'assistant', 'content', 'Done with step ' || seq)
         END
    FROM generate_series(1, $3) seq`;

/** The statements a repository call sends (to EXPLAIN them). */
function recording(db: Database): { db: Database; sent: { text: string; params: unknown[] }[] } {
  const sent: { text: string; params: unknown[] }[] = [];
  const wrapped = Object.create(db) as Database;
  wrapped.query = ((text: string, params: unknown[] = []) => {
    sent.push({ text, params });
    return db.query(text, params);
  }) as Database['query'];
  return { db: wrapped, sent };
}

async function main(): Promise<void> {
  const schema = await createTestSchema('bench_conv');
  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-conv-'));
  writeFileSync(join(dir, 'public.pem'), keys.publicKey);
  writeFileSync(join(dir, 'private.pem'), keys.privateKey);
  // The api process migrates the schema as it starts.
  const api = await startServiceProcess({
    entry: 'apps/api/dist/main.js',
    env: {
      REDIS_URL: process.env.REDIS_URL!,
      DATABASE_URL: process.env.DATABASE_URL!,
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: `bench:conv:${process.pid}:`,
      JWT_PUBLIC_KEY_FILE: join(dir, 'public.pem'),
      JWT_PRIVATE_KEY_FILE: join(dir, 'private.pem'),
      LOG_LEVEL: 'info',
    },
  });
  const sql = new pg.Client({
    connectionString: process.env.DATABASE_URL,
    options: `-c search_path=${schema.schema}`,
  });
  await sql.connect();
  const db = await createPostgresDatabase({
    url: process.env.DATABASE_URL!,
    schema: schema.schema,
  });
  try {
    const loadStart = performance.now();
    await sql.query(SESSIONS_SQL, ['big', 'b', SESSIONS]);
    await sql.query(SESSIONS_SQL, ['small', 's', 10]);
    for (let u = 0; u < OTHERS; u += 1) await sql.query(SESSIONS_SQL, [`other-${u}`, `o${u}`, 500]);
    await sql.query(CONVERSATION_SQL, ['reader', 'long', MESSAGES]);
    await sql.query(CONVERSATION_SQL, ['reader', 'short', 10]);
    await sql.query('VACUUM ANALYZE');
    const loadMs = performance.now() - loadStart;
    const count = async (table: string) =>
      (await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n;
    console.log(machineLine());
    console.log(
      `loaded in ${(loadMs / 1000).toFixed(1)} s: ${await count('agent_sessions')} sessions, ` +
        `${await count('agent_messages')} messages, ${await count('agent_runs')} runs, ` +
        `${await count('agent_approvals')} approvals`,
    );

    const token = (user: string) =>
      jwt.sign({ sub: user }, keys.privateKey, { algorithm: 'RS256', expiresIn: '2h' });
    const tokens = { big: token('big'), small: token('small'), reader: token('reader') };
    const get = async <T>(user: keyof typeof tokens, path: string): Promise<T> => {
      const response = await fetch(`${api.url}${path}`, {
        headers: { authorization: `Bearer ${tokens[user]}` },
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };

    // Cursors the API hands out: the sessions page after the first half, a messages page near the end.
    let cursor: string | null = null;
    for (let seen = 0; seen < SESSIONS / 2; seen += 100) {
      const page: SessionList = await get<SessionList>(
        'big',
        `/api/agent/sessions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      cursor = page.next_cursor;
    }
    const deepSessions = cursor!;
    let messagesCursor: string | null = null;
    for (let seen = 0; seen < MESSAGES - 100; seen += 100) {
      const page: MessageList = await get<MessageList>(
        'reader',
        `/api/agent/sessions/long/messages?limit=100${messagesCursor ? `&cursor=${encodeURIComponent(messagesCursor)}` : ''}`,
      );
      messagesCursor = page.next_cursor;
    }
    const deepMessages = messagesCursor!;

    const SESSIONS_BASELINE = 'sessions: user of 10, page of 10 (baseline)';
    const MESSAGES_BASELINE = 'messages: session of 10, page of 10 (baseline)';
    const deepS = `cursor=${encodeURIComponent(deepSessions)}`;
    const deepM = `cursor=${encodeURIComponent(deepMessages)}`;
    const kinds: { name: string; user: keyof typeof tokens; path: string; items: number }[] = [
      {
        name: `sessions: user of ${SESSIONS}, first page of 10`,
        user: 'big',
        path: '/api/agent/sessions?limit=10',
        items: 10,
      },
      {
        name: `sessions: user of ${SESSIONS}, page of 10 after ${SESSIONS / 2}`,
        user: 'big',
        path: `/api/agent/sessions?limit=10&${deepS}`,
        items: 10,
      },
      {
        name: `sessions: user of ${SESSIONS}, first page of 20 (default)`,
        user: 'big',
        path: '/api/agent/sessions',
        items: 20,
      },
      {
        name: `sessions: user of 2, one of them ${MESSAGES} messages`,
        user: 'reader',
        path: '/api/agent/sessions',
        items: 2,
      },
      { name: SESSIONS_BASELINE, user: 'small', path: '/api/agent/sessions?limit=10', items: 10 },
      {
        name: `messages: session of ${MESSAGES}, first page of 10`,
        user: 'reader',
        path: '/api/agent/sessions/long/messages?limit=10',
        items: 10,
      },
      {
        name: `messages: session of ${MESSAGES}, page of 10 at ${MESSAGES - 100}`,
        user: 'reader',
        path: `/api/agent/sessions/long/messages?limit=10&${deepM}`,
        items: 10,
      },
      {
        name: `messages: session of ${MESSAGES}, first page of 50 (default)`,
        user: 'reader',
        path: '/api/agent/sessions/long/messages',
        items: 50,
      },
      {
        name: MESSAGES_BASELINE,
        user: 'reader',
        path: '/api/agent/sessions/short/messages?limit=10',
        items: 10,
      },
    ];
    const times = new Map(kinds.map((k) => [k.name, [] as number[]]));
    for (const kind of kinds) {
      for (let i = 0; i < WARMUP; i += 1) await get(kind.user, kind.path);
      const body = await get<{ sessions?: unknown[]; messages?: unknown[] }>(kind.user, kind.path);
      const items = (body.sessions ?? body.messages)!.length;
      if (items !== kind.items) throw new Error(`${kind.name}: ${items} items, not ${kind.items}`);
    }
    const perRound = Math.ceil(REQUESTS / ROUNDS);
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]!);
      for (const kind of order) {
        for (let i = 0; i < perRound; i += 1) {
          const t0 = performance.now();
          await get(kind.user, kind.path);
          times.get(kind.name)!.push(performance.now() - t0);
        }
      }
    }
    const baseline = (name: string) => percentile(times.get(name)!, 50);
    console.log(`\n${perRound * ROUNDS} sequential requests per kind, ms:`);
    console.log('| request | items | p50 | p99 | p50 vs baseline |');
    console.log('| --- | ---: | ---: | ---: | ---: |');
    for (const kind of kinds) {
      const values = times.get(kind.name)!;
      const base = baseline(
        kind.name.startsWith('sessions') ? SESSIONS_BASELINE : MESSAGES_BASELINE,
      );
      console.log(
        `| ${kind.name} | ${kind.items} | ${percentile(values, 50).toFixed(2)} | ` +
          `${percentile(values, 99).toFixed(2)} | ${(percentile(values, 50) / base).toFixed(2)}× |`,
      );
    }

    // The plans of the statements the repository sends for the big cases.
    const repoDb = recording(db);
    const repository = new ConversationRepository(repoDb.db);
    const explain = async (label: string, call: () => Promise<unknown>) => {
      repoDb.sent.length = 0;
      await call();
      for (const statement of repoDb.sent) {
        if (/^SELECT 1 FROM agent_sessions/.test(statement.text.trim())) continue;
        const plan = () =>
          sql.query<{ 'QUERY PLAN': string }>(
            `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${statement.text}`,
            statement.params,
          );
        // The second of two: the first pays this connection's catalog caches.
        await plan();
        const { rows } = await plan();
        console.log(`\n-- ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
      }
    };
    await explain(`sessions of big, first page`, () => repository.list('big', { limit: 20 }));
    await explain(`sessions of big, page after ${SESSIONS / 2}`, () =>
      repository.list('big', { limit: 20, cursor: deepSessions }),
    );
    await explain(`sessions of reader (one of ${MESSAGES} messages)`, () =>
      repository.list('reader', { limit: 20 }),
    );
    await explain(`messages of long, page at ${MESSAGES - 100}`, () =>
      repository.messages(
        { userId: 'reader', sessionId: 'long' },
        { limit: 50, cursor: deepMessages },
      ),
    );
  } finally {
    await db.close();
    await sql.end();
    await api.stop('SIGKILL');
    await schema.drop();
  }
}

await main();

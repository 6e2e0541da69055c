/**
 * Memory search at scale: the search behind `memory_search` (`searchMemories`, hybrid and full
 * text) over 10,000 and 100,000 memories of one user, against the knowledge-base search
 * (`searchChunks`) over a base of the same size holding the same texts and vectors, measured
 * in the same run and the same rounds, so the ratio says what the memory table and its
 * statements cost compared with the knowledge search they reuse. Also: one `memory_save` at each
 * size (the near-duplicate check under the user's lock, then the insert) and a `SELECT 1`
 * round trip as the floor.
 *
 *   node --import tsx bench/memory-search.ts
 *
 * Data (deterministic, generated here): memories of 8–20 words (about 100 characters), words
 * from a Zipf-distributed general vocabulary (s = 1, so a few occur nearly everywhere, as stop
 * words do) mixed with the vocabulary of the memory's topic; embeddings are unit vectors near
 * the topic's (a second topic and noise mixed in). User `bench` gets SIZES memories and the
 * same texts as chunks of one knowledge base (documents of 1,000 chunks); user `other` gets
 * OTHER of each, so the owner filter has rows to skip. Rows are bulk-inserted (one statement
 * per 2,000 rows; memories with the key `save` would compute, chunks through
 * `KnowledgeRepository.storeChunks`), then VACUUM ANALYZE of every table the searches read
 * (without it the planner takes the fresh knowledge_documents for one row and joins badly,
 * 3-5x slower); the first size is measured, the
 * rest loaded, measured again. Queries: 5 words (3 general, often common, 2 of the topic) and
 * a vector near the topic; the embedding is not part of the time (no HTTP call).
 *
 * Env: ENGINE (postgres | pglite | both | pglite-dir; default postgres; `pglite` is PGlite in
 * memory, `pglite-dir` PGlite as the all-in-one opens it, in a data directory on its own thread,
 * closed and opened again after each size is loaded), SHARED_BUFFERS_MB (pglite-dir: a fixed
 * size; default sized by the data, as the service does), SIZES (default 10000,100000),
 * OTHER (default 20000), DIMS (default 384), QUERIES (default 100), WARMUP (default 5),
 * ROUNDS (default 4), SAVES (default 20 per size), SEED (default 13), EXPLAIN (default 0; 1
 * prints EXPLAIN (ANALYZE, BUFFERS) of every statement of both searches for the first query
 * at each size), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test; pgvector must be installed or installable). Each
 * PostgreSQL run uses a fresh schema, dropped at the end. Results: docs/BENCHMARKS.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { KnowledgeRepository, searchChunks } from '../packages/knowledge/src/index.js';
import { memoryKey, MemoryRepository, searchMemories } from '../packages/memory/src/index.js';
import { toArrayLiteral, type Embedder } from '../packages/search/src/index.js';
import {
  createPgliteDatabase,
  createPostgresDatabase,
  migrate,
  prepareVectorSearch,
  type Database,
  type Queryable,
} from '../packages/store/src/index.js';

const env = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return Math.floor(value);
};
const SIZES = (process.env.SIZES ?? '10000,100000')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const OTHER = env('OTHER', 20_000);
const DIMS = env('DIMS', 384);
const QUERIES = env('QUERIES', 100);
const WARMUP = env('WARMUP', 5);
const ROUNDS = Math.max(1, env('ROUNDS', 4));
const SAVES = env('SAVES', 20);
const SEED = env('SEED', 13);
const EXPLAIN = env('EXPLAIN', 0) === 1;
const ENGINE = process.env.ENGINE ?? 'postgres';
const URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MODEL = 'bench-embedding';
const USER = 'bench';
const OTHER_USER = 'other';
const TOPICS = 64;
const BATCH = 2_000;
const PER_DOC = 1_000;

// ---------------------------------------------------------------------------------------------
// Deterministic generator (mulberry32) and the data.

class Rng {
  private state: number;
  private spare: number | undefined;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  normal(): number {
    if (this.spare !== undefined) {
      const v = this.spare;
      this.spare = undefined;
      return v;
    }
    for (;;) {
      const u = 2 * this.next() - 1;
      const v = 2 * this.next() - 1;
      const q = u * u + v * v;
      if (q > 0 && q < 1) {
        const f = Math.sqrt((-2 * Math.log(q)) / q);
        this.spare = v * f;
        return u * f;
      }
    }
  }
}

const SYLLABLES = [...'bdfgklmnprstvz'].flatMap((c) => [...'aeiou'].map((v) => c + v));
function spell(n: number): string {
  let word = '';
  let rest = n;
  do {
    word += SYLLABLES[rest % SYLLABLES.length]!;
    rest = Math.floor(rest / SYLLABLES.length);
  } while (rest > 0);
  return word.length < 4 ? `${word}ra` : word;
}
function zipf(n: number): (rng: Rng) => number {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let r = 0; r < n; r++) cdf[r] = total += 1 / (r + 1);
  return (rng) => {
    const x = rng.next() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
const GENERAL = 20_000;
const TOPIC_WORDS = 200;
const general = Array.from({ length: GENERAL }, (_, i) => spell(i));
const topicVocab = Array.from({ length: TOPICS }, (_, t) =>
  Array.from({ length: TOPIC_WORDS }, (_, i) => spell(GENERAL + t * TOPIC_WORDS + i)),
);
const generalRank = zipf(GENERAL);
const topicRank = zipf(TOPIC_WORDS);

function memoryText(rng: Rng, topic: number): string {
  const n = 8 + rng.int(13);
  const words: string[] = [];
  for (let i = 0; i < n; i++) {
    words.push(rng.next() < 0.3 ? topicVocab[topic]![topicRank(rng)]! : general[generalRank(rng)]!);
  }
  return `${words.join(' ')}.`;
}

function unit(v: Float64Array): number[] {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  return Array.from(v, (x) => x / norm);
}
const topicRng = new Rng(SEED * 7919 + 1);
const topicVectors = Array.from({ length: TOPICS }, () =>
  unit(Float64Array.from({ length: DIMS }, () => topicRng.normal())),
);
function embed(rng: Rng, main: number, second: number, weight: number, noise: number): number[] {
  const a = topicVectors[main]!;
  const b = topicVectors[second]!;
  const sigma = noise / Math.sqrt(DIMS);
  const v = new Float64Array(DIMS);
  for (let i = 0; i < DIMS; i++) v[i] = a[i]! + weight * b[i]! + sigma * rng.normal();
  return unit(v);
}

interface Item {
  readonly text: string;
  readonly vector: number[];
}
/** Item `i` of a user's stream: the same whatever was generated before it. */
function item(seed: number, i: number): Item {
  const rng = new Rng(seed * 1_000_003 + i);
  const topic = rng.int(TOPICS);
  const second = (topic + 1 + rng.int(TOPICS - 1)) % TOPICS;
  return { text: memoryText(rng, topic), vector: embed(rng, topic, second, 0.5, 0.9) };
}

// ---------------------------------------------------------------------------------------------
// Loading.

async function insertMemories(db: Queryable, userId: string, items: readonly Item[]) {
  for (let start = 0; start < items.length; start += BATCH) {
    const batch = items.slice(start, start + BATCH);
    await db.query(
      `INSERT INTO memories (user_id, memory_id, content, content_key, tags, embedding,
         embedding_model, embedding_dims)
       SELECT $1, 'mem_' || md5(t.key || $1), t.content, t.key, '[]'::jsonb, t.embedding::real[],
              $2, $3
       FROM unnest($4::text[], $5::text[], $6::text[]) AS t(content, key, embedding)
       ON CONFLICT (user_id, content_key) DO NOTHING`,
      [
        userId,
        MODEL,
        DIMS,
        batch.map((m) => m.text),
        batch.map((m) => memoryKey(m.text)),
        batch.map((m) => toArrayLiteral(m.vector)),
      ],
    );
  }
}

async function insertChunks(
  repo: KnowledgeRepository,
  userId: string,
  baseId: string,
  items: readonly Item[],
) {
  for (let start = 0; start < items.length; start += PER_DOC) {
    const batch = items.slice(start, start + PER_DOC);
    const doc = await repo.addDocument(userId, baseId, {
      name: `doc-${start}`,
      type: 'text',
      content: '(bench)',
    });
    if (!doc) throw new Error('no base');
    await repo.storeChunks(
      doc.id,
      batch.map((m) => m.text),
      { model: MODEL, vectors: batch.map((m) => m.vector) },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Measurement.

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
function stats(ms: readonly number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}
const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const ratio = (x: number) => `${x.toFixed(2)}×`;
const thousands = (n: number) => n.toLocaleString('en-US');

interface Query {
  readonly text: string;
  readonly vector: number[];
}
function makeQueries(n: number, seed: number): Query[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => {
    const topic = rng.int(TOPICS);
    const own = () => topicVocab[topic]![topicRank(rng)]!;
    const gen = () => general[generalRank(rng)]!;
    return {
      text: [gen(), own(), gen(), own(), gen()].join(' '),
      vector: embed(rng, topic, rng.int(TOPICS), 0.3, 0.7),
    };
  });
}

interface Variant {
  readonly name: string;
  readonly run: (q: Query) => Promise<unknown>;
  readonly ms: number[];
}

async function measure(variants: Variant[], queries: Query[], warmups: Query[]) {
  for (const v of variants) for (const q of warmups) await v.run(q);
  const perRound = Math.ceil(queries.length / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const v of order) {
      for (let i = round * perRound; i < Math.min(queries.length, (round + 1) * perRound); i++) {
        const t0 = performance.now();
        await v.run(queries[i]!);
        v.ms.push(performance.now() - t0);
      }
    }
  }
}

/** A Queryable that runs each search statement, then prints its EXPLAIN (ANALYZE, BUFFERS). */
function explaining(db: Queryable): Queryable {
  return {
    async query<R extends Record<string, unknown>>(sql: string, params?: readonly unknown[]) {
      const result = await db.query<R>(sql, params);
      if (/FROM (memories|knowledge_chunks) [mc]\b/.test(sql)) {
        const plan = await db.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, BUFFERS) ${sql}`,
          params,
        );
        const lines = plan.rows.map((r) =>
          r['QUERY PLAN'].replace(/'(\[|\{)[-0-9.,e]{200,}(\]|\})'/g, "'…vector…'"),
        );
        console.log(
          `-- ${sql.replace(/\s+/g, ' ').trim().slice(0, 100)} ...\n${lines.join('\n')}\n`,
        );
      }
      return result;
    },
  };
}

/** An embedder answering from the data's own vectors: saves then cost no HTTP round trip. */
function localEmbedder(vectors: Map<string, number[]>): Embedder {
  return {
    model: MODEL,
    embed: (texts) => Promise.resolve(texts.map((t) => vectors.get(t) ?? null)),
  };
}

/**
 * Loads and measures each size on `db`. `reopen`: after each size is loaded, the database is
 * closed and opened again before it is measured, as a service restarted on its data opens it.
 * Returns the database open at the end, for the caller to close.
 */
async function runEngine(
  label: string,
  db: Database,
  reopen?: (db: Database) => Promise<Database>,
): Promise<Database> {
  await migrate(db);
  const support = await prepareVectorSearch(db, 'auto');
  console.log(
    `\n## ${label}: vectors ${support.kind === 'pgvector' ? `pgvector ${support.version}` : `real[] (${support.reason})`}`,
  );
  let knowledge = new KnowledgeRepository(db);
  const base = await knowledge.createBase(USER, 'bench');
  const otherBase = await knowledge.createBase(OTHER_USER, 'other');
  const otherItems = Array.from({ length: OTHER }, (_, i) => item(SEED + 1, i));
  let t0 = performance.now();
  await insertMemories(db, OTHER_USER, otherItems);
  await insertChunks(knowledge, OTHER_USER, otherBase.id, otherItems);
  console.log(
    `loaded ${thousands(OTHER)} memories and chunks of user ${OTHER_USER} in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );

  const rows: string[] = [];
  let loaded = 0;
  for (const size of SIZES) {
    t0 = performance.now();
    const items = Array.from({ length: size - loaded }, (_, i) => item(SEED, loaded + i));
    await insertMemories(db, USER, items);
    await insertChunks(knowledge, USER, base.id, items);
    loaded = size;
    // Every table the two searches read, as autovacuum would have by the time they are this big.
    for (const table of [
      'memories',
      'knowledge_bases',
      'knowledge_documents',
      'knowledge_chunks',
    ]) {
      await db.query(`VACUUM (ANALYZE) ${table}`);
    }
    if (reopen) {
      db = await reopen(db);
      knowledge = new KnowledgeRepository(db);
      const { rows } = await db.query<{ s: string }>(
        `SELECT current_setting('shared_buffers') AS s`,
      );
      console.log(`size ${thousands(size)}: reopened, shared_buffers ${rows[0]!.s}`);
    }
    const { rows: counted } = await db.query<{ m: number; c: number }>(
      `SELECT (SELECT count(*)::int FROM memories WHERE user_id = $1) AS m,
              (SELECT count(*)::int FROM knowledge_chunks WHERE user_id = $1) AS c`,
      [USER],
    );
    console.log(
      `size ${thousands(size)}: ${thousands(counted[0]!.m)} memories, ${thousands(counted[0]!.c)} chunks of ${USER}; ` +
        `load ${((performance.now() - t0) / 1000).toFixed(0)} s, 1-min load ${loadavg()[0]!.toFixed(2)}`,
    );
    // A new handle per size: the word statistics are cached per handle for 5 minutes.
    const handle: Queryable = { query: db.query.bind(db) };
    const queries = makeQueries(QUERIES, SEED * 31 + size);
    const warmups = makeQueries(WARMUP, SEED * 37 + size);
    const variant = (name: string, run: Variant['run']): Variant => ({ name, run, ms: [] });
    const floor = variant('round trip `SELECT 1`', () => handle.query('SELECT 1'));
    const memHybrid = variant('memory, hybrid', (q) =>
      searchMemories(handle, {
        userId: USER,
        query: q.text,
        embedding: { model: MODEL, vector: q.vector },
      }),
    );
    const kbHybrid = variant('knowledge, hybrid', (q) =>
      searchChunks(handle, {
        userId: USER,
        knowledgeBaseIds: [base.id],
        query: q.text,
        embedding: { model: MODEL, vector: q.vector },
      }),
    );
    const memLexical = variant('memory, full text', (q) =>
      searchMemories(handle, { userId: USER, query: q.text }),
    );
    const kbLexical = variant('knowledge, full text', (q) =>
      searchChunks(handle, { userId: USER, knowledgeBaseIds: [base.id], query: q.text }),
    );
    if (EXPLAIN) {
      const q = queries[0]!;
      console.log(`\nEXPLAIN at ${thousands(size)}, query "${q.text}":\n`);
      const x = explaining(handle);
      const embedding = { model: MODEL, vector: q.vector };
      await searchMemories(x, { userId: USER, query: q.text, embedding });
      await searchChunks(x, {
        userId: USER,
        knowledgeBaseIds: [base.id],
        query: q.text,
        embedding,
      });
    }
    const loadDuring = [loadavg()[0]!];
    await measure([floor, memHybrid, kbHybrid, memLexical, kbLexical], queries, warmups);
    loadDuring.push(loadavg()[0]!);

    // Saves at this size: new texts, so each runs the whole near-duplicate check and inserts.
    const saveItems = Array.from({ length: SAVES }, (_, i) => item(SEED + 2, size + i));
    const repo = new MemoryRepository(db, {
      embedder: localEmbedder(new Map(saveItems.map((m) => [m.text, m.vector]))),
    });
    const saveMs: number[] = [];
    for (const m of saveItems) {
      const s0 = performance.now();
      const outcome = await repo.save(USER, { text: m.text });
      saveMs.push(performance.now() - s0);
      await repo.delete(USER, outcome.memory.id);
    }

    const f = stats(floor.ms);
    rows.push(
      `| ${thousands(size)} | round trip \`SELECT 1\` | ${fmt(f.p50)} / ${fmt(f.p99)} | | |`,
    );
    for (const [mem, kb] of [
      [memHybrid, kbHybrid],
      [memLexical, kbLexical],
    ] as const) {
      const a = stats(mem.ms);
      const b = stats(kb.ms);
      rows.push(
        `| ${thousands(size)} | ${mem.name.replace('memory, ', '')} | ${fmt(a.p50)} / ${fmt(a.p99)} | ` +
          `${fmt(b.p50)} / ${fmt(b.p99)} | ${ratio(a.p50 / b.p50)} / ${ratio(a.p99 / b.p99)} |`,
      );
    }
    const s = stats(saveMs);
    rows.push(
      `| ${thousands(size)} | \`memory_save\` (${SAVES}, new texts, no HTTP embedding) | ${fmt(s.p50)} / ${fmt(s.p99)} | | |`,
    );
    console.log(
      `  measured: 1-min load ${Math.min(...loadDuring).toFixed(2)}–${Math.max(...loadDuring).toFixed(2)}`,
    );
  }
  console.log(
    `\n| memories per user | search | memory p50 / p99 (ms) | knowledge, same size, p50 / p99 (ms) | memory ÷ knowledge (p50 / p99) |`,
  );
  console.log('| ---: | --- | ---: | ---: | --- |');
  for (const row of rows) console.log(row);
  return db;
}

// ---------------------------------------------------------------------------------------------

const started = performance.now();
console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}; sizes ${SIZES.map(thousands).join(', ')}, ` +
    `other user ${thousands(OTHER)}, ${DIMS} dimensions, ${QUERIES} queries (+${WARMUP} warm-up) per variant in ` +
    `${ROUNDS} rounds, seed ${SEED}; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
);

if (ENGINE === 'postgres' || ENGINE === 'both') {
  const schema = `bench_mem_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  const drop = () => admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  process.once('SIGINT', () => void drop().finally(() => process.exit(130)));
  const db = await createPostgresDatabase({ url: URL, schema, max: 4 });
  try {
    const server = (
      await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")
    ).rows[0]!.v;
    await runEngine(`PostgreSQL ${server}`, db);
  } finally {
    await db.close();
    await drop();
    await admin.end();
  }
}
if (ENGINE === 'pglite' || ENGINE === 'both') {
  let db: Database = await createPgliteDatabase();
  try {
    db = await runEngine('PGlite (in memory)', db);
  } finally {
    await db.close();
  }
}
if (ENGINE === 'pglite-dir') {
  // As the all-in-one opens it: files in a data directory, PostgreSQL on its own thread, its
  // settings those of a service started on this data.
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-memory-search-'));
  const sharedBuffersMb = process.env.SHARED_BUFFERS_MB ? env('SHARED_BUFFERS_MB', 16) : undefined;
  const open = () => createPgliteDatabase({ dataDir, thread: true, sharedBuffersMb });
  let db: Database = await open();
  try {
    db = await runEngine('PGlite (data directory, reopened after each load)', db, async (old) => {
      await old.close();
      return open();
    });
  } finally {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
console.log(`\nwhole run ${((performance.now() - started) / 1000).toFixed(0)} s`);

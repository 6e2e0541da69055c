/**
 * Knowledge-base search at scale: `searchChunks` latency (p50/p95/p99/mean) over a base of
 * 100,000 chunks on PostgreSQL, lexical and hybrid, with pgvector and with the plain-SQL `real[]`
 * fallback, against baselines measured in the same run: the same searches over a base of 1,000
 * chunks of the same user (how cost grows with 100× the chunks) and a primary-key lookup of one
 * chunk (the round-trip floor of the same connection pool).
 *
 *   node --import tsx bench/knowledge-search-scale.ts
 *
 * Data (deterministic, generated here): user `bench` has a big base (CHUNKS chunks), a base of
 * ARRAY_EXACT_MAX_CHUNKS (5,000) chunks and a base of 1,000 chunks; user `other` has OTHER chunks
 * in two bases, so the filters by user and base have rows to skip. Documents of 100 chunks of
 * about 1,000 characters, words from a Zipf-distributed general vocabulary (s = 1, so a few words
 * occur in nearly every chunk, as stop words do under the `simple` configuration) mixed with the
 * vocabulary of the document's topic. Embeddings: unit vectors, the document's topic vector plus
 * a second topic and noise; a query vector lies near its topic, so nearest neighbours mean
 * something. Everything is stored through `KnowledgeRepository.storeChunks` in a fresh schema
 * whose column is a pgvector `vector`; a second fresh schema set to `prepareVectorSearch(db,
 * 'off')` (`real[]`) receives a copy of the same rows (`embedding::real[]`, the cast the library
 * itself uses to switch a column back). Then VACUUM ANALYZE. Every schema is dropped at the end.
 *
 * Queries: sentence-like queries (5 words: 3 general words, often common ones, and 2 words of the
 * query's topic) for every search; for lexical search also topic-word queries (2 topic words,
 * selective). All variants run the same queries, after WARMUP warm-up queries each, in ROUNDS
 * rounds whose variant order rotates, so drift on a shared machine hits all alike.
 *
 * Env: CHUNKS (default 100000), DIMS (default 384), QUERIES (default 200), WARMUP (default 5),
 * ROUNDS (default 4), OTHER (default 20000 chunks of another user), CONCURRENCY (default 2
 * documents stored at once), SEED (default 11), EXPLAIN (default 1: also print where the time
 * goes and EXPLAIN (ANALYZE, BUFFERS) of the library's own statements for one query), TSV_MAIN
 * (default 0; 1 adds a what-if schema whose `tsv` column is `SET STORAGE MAIN`, i.e. kept in the
 * row instead of TOAST like the embedding, and measures lexical and hybrid search on it too), KEEP (default 0; 1 leaves
 * the schemas in place for inspection), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test; pgvector must be installed or installable).
 *
 * With the defaults the run took 16 minutes on 2 shared cores (loading about 3; the searches
 * at 100,000 chunks cost 0.7–1.7 s each); QUERIES=100 takes about 9. Results and their reading:
 * docs/BENCHMARKS.md.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { KnowledgeSearchHit } from '@agent-backend/protocol';
import {
  ARRAY_EXACT_MAX_CHUNKS,
  COMMON_WORD_SHARE,
  KnowledgeRepository,
  searchChunks,
} from '../packages/knowledge/src/index.js';
import { readWordShares } from '../packages/search/src/index.js';
import {
  createPostgresDatabase,
  migrate,
  prepareVectorSearch,
  quoteIdentifier,
  type Database,
  type Queryable,
} from '../packages/store/src/index.js';

const env = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`);
  return Math.floor(value);
};
const BIG = env('CHUNKS', 100_000);
const DIMS = env('DIMS', 384);
const QUERIES = env('QUERIES', 200);
const WARMUP = env('WARMUP', 5);
const ROUNDS = Math.max(1, env('ROUNDS', 4));
const OTHER = env('OTHER', 20_000);
const CONCURRENCY = Math.max(1, env('CONCURRENCY', 2));
const SEED = env('SEED', 11);
const EXPLAIN = env('EXPLAIN', 1) === 1;
const KEEP = env('KEEP', 0) === 1;
const TSV_MAIN = env('TSV_MAIN', 0) === 1;
const URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SMALL = 1_000;
const MID = ARRAY_EXACT_MAX_CHUNKS;
const PER_DOC = 100;
const TOPICS = 64;
const MODEL = 'bench-embedding';
const USER = 'bench';
const OTHER_USER = 'other';

// ---------------------------------------------------------------------------------------------
// Deterministic generator: xoshiro128** seeded through splitmix32.

class Rng {
  private s: Uint32Array;
  private spare: number | undefined;
  constructor(seed: number) {
    let x = seed >>> 0;
    const next = () => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s = new Uint32Array([next(), next(), next(), next()]);
  }
  /** Uniform in [0, 1). */
  next(): number {
    const s = this.s;
    let [a, b, c, d] = [s[0]!, s[1]!, s[2]!, s[3]!];
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    s[0] = a;
    s[1] = b;
    s[2] = c;
    s[3] = d;
    return result / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  /** Standard normal (Marsaglia's polar method). */
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
const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

// ---------------------------------------------------------------------------------------------
// Vocabulary and text.

const CONSONANTS = 'bdfgklmnprstvz';
const VOWELS = 'aeiou';
const SYLLABLES = [...CONSONANTS].flatMap((c) => [...VOWELS].map((v) => c + v));
/** Word number `n` spelled with 2–4 syllables (distinct numbers give distinct words). */
function spell(n: number): string {
  const b = SYLLABLES.length;
  let word = '';
  let rest = n;
  do {
    word += SYLLABLES[rest % b]!;
    rest = Math.floor(rest / b);
  } while (rest > 0);
  return word.length < 4 ? word + 'ra' : word;
}

/** Sampler of ranks 0..n-1 with P(rank r) ∝ 1 / (r + 1)^s. */
function zipf(n: number, s: number): (rng: Rng) => number {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let r = 0; r < n; r++) cdf[r] = total += 1 / (r + 1) ** s;
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

const GENERAL_WORDS = 30_000;
const TOPIC_WORDS = 200;
const general = Array.from({ length: GENERAL_WORDS }, (_, i) => spell(i));
/** Each topic has its own words, spelled after the general ones (never shared). */
const topicVocab = Array.from({ length: TOPICS }, (_, t) =>
  Array.from({ length: TOPIC_WORDS }, (_, i) => spell(GENERAL_WORDS + t * TOPIC_WORDS + i)),
);
const generalRank = zipf(GENERAL_WORDS, 1);
const topicRank = zipf(TOPIC_WORDS, 1);

function chunkText(rng: Rng, topic: number, second: number): string {
  let text = '';
  for (;;) {
    const length = 8 + rng.int(13);
    const words: string[] = [];
    for (let i = 0; i < length; i++) {
      const p = rng.next();
      words.push(
        p < 0.25
          ? topicVocab[topic]![topicRank(rng)]!
          : p < 0.33
            ? topicVocab[second]![topicRank(rng)]!
            : general[generalRank(rng)]!,
      );
    }
    const sentence = words.join(' ') + '.';
    if (text.length + sentence.length + 1 > 1000) {
      // Fill up to about 1,000 characters with a cut sentence, as a splitter's cut would.
      const room = 1000 - text.length - 1;
      const cut = sentence.slice(0, room).replace(/\s+\S*$/, '');
      return cut.length > 0 ? `${text} ${cut}` : text;
    }
    text = text ? `${text} ${sentence}` : sentence;
  }
}

// ---------------------------------------------------------------------------------------------
// Embeddings.

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
/** Unit vector: `main` topic + `weight` × `second` topic + Gaussian noise of norm ≈ `noise`. */
function embed(rng: Rng, main: number, second: number, weight: number, noise: number): number[] {
  const a = topicVectors[main]!;
  const b = topicVectors[second]!;
  const sigma = noise / Math.sqrt(DIMS);
  const v = new Float64Array(DIMS);
  for (let i = 0; i < DIMS; i++) v[i] = a[i]! + weight * b[i]! + sigma * rng.normal();
  return unit(v);
}

// ---------------------------------------------------------------------------------------------
// Loading.

interface Base {
  readonly id: string;
  readonly chunks: number;
  readonly documents: string[];
}
/** Topic of every document (all its chunks share it), to judge what a search returns. */
const documentTopic = new Map<string, number>();

async function loadBase(
  repo: KnowledgeRepository,
  rng: Rng,
  userId: string,
  name: string,
  chunks: number,
  progress: (n: number) => void,
): Promise<Base> {
  const base = await repo.createBase(userId, name);
  const docs = Math.ceil(chunks / PER_DOC);
  // Generate each document's text and vectors in a fixed order (deterministic whatever the
  // storage interleaving), store up to CONCURRENCY documents at once.
  const plans = Array.from({ length: docs }, (_, d) => ({
    d,
    size: Math.min(PER_DOC, chunks - d * PER_DOC),
    topic: rng.int(TOPICS),
    seed: rng.int(2 ** 31),
  }));
  const ids: string[] = new Array<string>(docs);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < plans.length) {
        const plan = plans[next++]!;
        // Text and vectors from separate streams: the same texts whatever DIMS is.
        const local = new Rng(plan.seed);
        const noise = new Rng(plan.seed ^ 0x5bd1e995);
        const texts: string[] = [];
        const vectors: number[][] = [];
        for (let i = 0; i < plan.size; i++) {
          let second = local.int(TOPICS - 1);
          if (second >= plan.topic) second++;
          texts.push(chunkText(local, plan.topic, second));
          vectors.push(embed(noise, plan.topic, second, 0.5, 0.9));
        }
        const doc = await repo.addDocument(userId, base.id, {
          name: `${name}-${plan.d}.txt`,
          type: 'text',
          content: texts.join('\n\n'),
        });
        if (!doc) throw new Error('addDocument found no base');
        if (!(await repo.storeChunks(doc.id, texts, { model: MODEL, vectors }))) {
          throw new Error('storeChunks found no document');
        }
        ids[plan.d] = doc.id;
        documentTopic.set(doc.id, plan.topic);
        progress(plan.size);
      }
    }),
  );
  return { id: base.id, chunks, documents: ids };
}

// ---------------------------------------------------------------------------------------------
// Queries.

interface Query {
  readonly sentence: string;
  readonly selective: string;
  readonly topic: number;
  readonly vector: number[];
  /** A chunk of the big base for the primary-key lookup. */
  readonly pick: number;
}

function makeQueries(rng: Rng, noise: Rng, n: number): Query[] {
  return Array.from({ length: n }, () => {
    const topic = rng.int(TOPICS);
    const own = () => topicVocab[topic]![topicRank(rng)]!;
    const words = [general[generalRank(rng)]!, own(), general[generalRank(rng)]!, own()];
    words.push(general[generalRank(rng)]!);
    return {
      sentence: words.join(' '),
      selective: `${own()} ${own()}`,
      topic,
      vector: embed(noise, topic, rng.int(TOPICS), 0.3, 0.7),
      pick: rng.int(2 ** 31),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Measurement.

interface Variant {
  readonly name: string;
  /** Chunks of the searched base; undefined for the round-trip rows. */
  readonly chunks?: number;
  readonly run: (q: Query) => Promise<KnowledgeSearchHit[] | undefined>;
  readonly ms: number[];
  /** Per measured query: the hits' keys, in order. */
  readonly keys: string[][];
  onTopic: number;
  hits: number;
}

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
function stats(ms: readonly number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    mean: ms.reduce((a, b) => a + b, 0) / ms.length,
  };
}
const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const ratio = (x: number) => (x >= 10 ? `${x.toFixed(0)}×` : `${x.toFixed(2)}×`);
const thousands = (n: number) => n.toLocaleString('en-US');

const loadSamples: number[] = [];
const sampleLoad = () => loadSamples.push(loadavg()[0]!);

// ---------------------------------------------------------------------------------------------
// EXPLAIN of the library's own statements: a Queryable that runs each statement and then
// EXPLAIN (ANALYZE, BUFFERS) of it with the same parameters.

function explaining(db: Database, sink: string[]): Queryable {
  return {
    async query<R extends Record<string, unknown>>(sql: string, params?: readonly unknown[]) {
      const result = await db.query<R>(sql, params);
      if (/FROM knowledge_chunks c/.test(sql)) {
        const plan = await db.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, BUFFERS, SETTINGS) ${sql}`,
          params,
        );
        const head = sql.replace(/\s+/g, ' ').trim().slice(0, 110);
        // Vector literals (hundreds of numbers) are cut down to their size.
        const lines = plan.rows.map((r) =>
          r['QUERY PLAN'].replace(
            /'(\[|\{)[-0-9.,e]{200,}(\]|\})'/g,
            (m) => `'${m[1]}…${m.split(',').length} numbers…${m[m.length - 2]}'`,
          ),
        );
        sink.push(`-- ${head} ...\n${lines.join('\n')}`);
      }
      return result;
    },
  };
}

// ---------------------------------------------------------------------------------------------

const startedAt = performance.now();
const loadTimer = setInterval(sampleLoad, 5_000);
sampleLoad();
const loadBefore = loadavg();
const suffix = randomBytes(4).toString('hex');
const schemas = {
  vector: `bench_kbs_vec_${suffix}`,
  array: `bench_kbs_arr_${suffix}`,
  main: `bench_kbs_main_${suffix}`,
};
const admin = new pg.Client({ connectionString: URL });
await admin.connect();
let cleaned = false;
async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  clearInterval(loadTimer);
  for (const schema of Object.values(schemas)) {
    if (KEEP) {
      console.log(`KEEP=1: schema ${schema} left in place (if created); drop it with CASCADE`);
      continue;
    }
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: unknown) => {
      console.error(`could not drop schema ${schema}:`, error);
    });
  }
  await admin.end().catch(() => {});
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: dropping the bench schemas`);
    void cleanup().finally(() => process.exit(130));
  });
}

const opened: Database[] = [];
const open = async (schema: string, max: number) => {
  const db = await createPostgresDatabase({ url: URL, schema, max });
  opened.push(db);
  await migrate(db);
  return db;
};
/** Copies every knowledge row of the pgvector schema, with the embedding cast to `type`. */
async function copyRows(db: Database, type: string): Promise<void> {
  const from = (table: string) => `"${schemas.vector}".${table}`;
  await db.query(`INSERT INTO knowledge_bases SELECT * FROM ${from('knowledge_bases')}`);
  await db.query(`INSERT INTO knowledge_documents SELECT * FROM ${from('knowledge_documents')}`);
  await db.query(
    `INSERT INTO knowledge_chunks
       (document_id, chunk_index, knowledge_base_id, user_id, content, embedding, embedding_model,
        embedding_dims)
     SELECT document_id, chunk_index, knowledge_base_id, user_id, content, embedding::${type},
            embedding_model, embedding_dims
     FROM ${from('knowledge_chunks')}`,
  );
}
/** Median of `n` runs of one statement, in ms. */
async function median(db: Queryable, sql: string, params: unknown[], n = 5): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await db.query(sql, params);
    ms.push(performance.now() - t0);
  }
  return stats(ms).p50;
}

try {
  const dbVector = await open(schemas.vector, CONCURRENCY + 2);
  const dbArray = await open(schemas.array, 2);
  const dbMain = TSV_MAIN ? await open(schemas.main, 2) : undefined;
  const support = await prepareVectorSearch(dbVector, 'auto');
  if (support.kind !== 'pgvector') throw new Error(`pgvector is not usable: ${support.reason}`);
  await prepareVectorSearch(dbArray, 'off');
  const vectorType = `${quoteIdentifier(support.schema)}.vector`;
  if (dbMain) {
    await prepareVectorSearch(dbMain, 'auto');
    // The what-if: the tsvector kept in the row too, instead of TOAST.
    await dbMain.query('ALTER TABLE knowledge_chunks ALTER COLUMN tsv SET STORAGE MAIN');
  }

  const server = (
    await admin.query<{ v: string }>('SELECT current_setting($1) AS v', ['server_version'])
  ).rows[0]!.v;
  const settings = await admin.query<{ name: string; setting: string; unit: string | null }>(
    `SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem',
       'jit', 'max_parallel_workers_per_gather', 'effective_cache_size', 'random_page_cost')
     ORDER BY name`,
  );
  console.log(
    `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}; PostgreSQL ${server}, ` +
      `pgvector ${support.version} (schema ${support.schema})`,
  );
  console.log(
    `settings: ${settings.rows.map((r) => `${r.name}=${r.setting}${r.unit ?? ''}`).join(', ')}`,
  );
  console.log(
    `data: ${thousands(BIG)} + ${thousands(MID)} + ${thousands(SMALL)} chunks (user ${USER}), ` +
      `${thousands(OTHER)} chunks (user ${OTHER_USER}); ${DIMS} dimensions; ${PER_DOC} chunks ` +
      `per document; ${QUERIES} queries (+${WARMUP} warm-up) per variant in ${ROUNDS} rounds; ` +
      `seed ${SEED}${TSV_MAIN ? '; TSV_MAIN=1' : ''}`,
  );
  console.log(`load average before: ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`);

  // Load through the repository, then copy.
  const repo = new KnowledgeRepository(dbVector);
  const rng = new Rng(SEED);
  const total = BIG + MID + SMALL + OTHER;
  let stored = 0;
  let reported = 0;
  const loadStart = performance.now();
  const progress = (n: number) => {
    stored += n;
    if (stored - reported >= total / 5 || stored === total) {
      reported = stored;
      const s = (performance.now() - loadStart) / 1000;
      console.log(`  stored ${thousands(stored)} / ${thousands(total)} chunks, ${s.toFixed(0)} s`);
    }
  };
  const big = await loadBase(repo, rng, USER, 'big', BIG, progress);
  const mid = await loadBase(repo, rng, USER, 'mid', MID, progress);
  const small = await loadBase(repo, rng, USER, 'small', SMALL, progress);
  const otherHalf = Math.floor(OTHER / 2);
  await loadBase(repo, rng, OTHER_USER, 'other-a', otherHalf, progress);
  await loadBase(repo, rng, OTHER_USER, 'other-b', OTHER - otherHalf, progress);
  const storeSeconds = (performance.now() - loadStart) / 1000;
  const copyStart = performance.now();
  await copyRows(dbArray, 'real[]');
  if (dbMain) await copyRows(dbMain, vectorType);
  const copySeconds = (performance.now() - copyStart) / 1000;
  const vacuumStart = performance.now();
  for (const db of opened) {
    for (const table of ['knowledge_bases', 'knowledge_documents', 'knowledge_chunks']) {
      await db.query(`VACUUM (ANALYZE) ${table}`);
    }
  }
  const vacuumSeconds = (performance.now() - vacuumStart) / 1000;
  console.log(
    `loading: storeChunks ${storeSeconds.toFixed(0)} s (${((storeSeconds * 1e6) / total).toFixed(0)} µs/chunk), ` +
      `copies ${copySeconds.toFixed(0)} s, VACUUM ANALYZE ${vacuumSeconds.toFixed(0)} s`,
  );
  const common = [...(await readWordShares(dbVector, 'knowledge_chunks'))]
    .filter(([, share]) => share >= COMMON_WORD_SHARE)
    .sort((a, b) => b[1] - a[1])
    .map(([word, share]) => ({ word, share }));
  console.log(
    `common words (in ≥ ${COMMON_WORD_SHARE * 100} % of chunks, from ANALYZE): ${common.length}` +
      (common.length > 0
        ? `, from "${common[0]!.word}" (${(common[0]!.share * 100).toFixed(0)} %) to ` +
          `"${common.at(-1)!.word}" (${(common.at(-1)!.share * 100).toFixed(0)} %)`
        : ''),
  );

  const layouts = [
    ['pgvector', dbVector],
    ['real[]', dbArray],
    ...(dbMain ? [['pgvector, tsv STORAGE MAIN', dbMain] as const] : []),
  ] as const;
  for (const [label, db] of layouts) {
    const { rows } = await db.query<{
      n: number;
      total: string;
      heap: string;
      toast: string;
      indexes: string;
      avg_len: number;
      storage: string;
    }>(
      `SELECT (SELECT count(*)::int FROM knowledge_chunks) AS n,
         pg_size_pretty(pg_total_relation_size('knowledge_chunks')) AS total,
         pg_size_pretty(pg_relation_size('knowledge_chunks')) AS heap,
         pg_size_pretty(COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)) AS toast,
         pg_size_pretty(pg_indexes_size('knowledge_chunks')) AS indexes,
         (SELECT avg(length(content))::int FROM knowledge_chunks) AS avg_len,
         (SELECT attstorage::text FROM pg_attribute
          WHERE attrelid = c.oid AND attname = 'embedding') AS storage
       FROM pg_class c WHERE c.oid = 'knowledge_chunks'::regclass`,
    );
    const r = rows[0]!;
    console.log(
      `knowledge_chunks (${label}): ${thousands(r.n)} rows, total ${r.total} (heap ${r.heap}, ` +
        `TOAST ${r.toast}, indexes ${r.indexes}); embedding storage '${r.storage}'; content ` +
        `${r.avg_len} characters on average`,
    );
  }

  // Variants.
  const queryRng = new Rng(SEED * 31 + 5);
  const queryNoise = new Rng(SEED * 31 + 6);
  const warmups = makeQueries(queryRng, queryNoise, WARMUP);
  const queries = makeQueries(queryRng, queryNoise, QUERIES);
  const bases = (
    [
      [small, SMALL],
      [mid, MID],
      [big, BIG],
    ] as const
  ).toSorted((a, b) => a[1] - b[1]);
  const variant = (name: string, chunks: number | undefined, run: Variant['run']): Variant => ({
    name,
    chunks,
    run,
    ms: [],
    keys: [],
    onTopic: 0,
    hits: 0,
  });
  const search = (
    db: Queryable,
    base: Base,
    query: string,
    vector?: number[],
    commonWordShare?: number,
  ): Promise<KnowledgeSearchHit[]> =>
    searchChunks(db, {
      userId: USER,
      knowledgeBaseIds: [base.id],
      query,
      embedding: vector ? { model: MODEL, vector } : undefined,
      commonWordShare,
    });
  const floorSelect = variant('round trip: `SELECT 1`', undefined, async () => {
    await dbVector.query('SELECT 1');
    return undefined;
  });
  const floorLookup = variant('round trip: one chunk by primary key', undefined, async (q) => {
    const doc = big.documents[q.pick % big.documents.length]!;
    await dbVector.query(
      'SELECT content FROM knowledge_chunks WHERE document_id = $1 AND chunk_index = $2',
      [doc, q.pick % PER_DOC],
    );
    return undefined;
  });
  const lexical = bases.map(([base, n]) =>
    variant('lexical, sentence query', n, (q) => search(dbVector, base, q.sentence)),
  );
  const selective = [bases[0]!, bases[2]!].map(([base, n]) =>
    variant('lexical, topic-word query', n, (q) => search(dbVector, base, q.selective)),
  );
  const hybridVector = bases.map(([base, n]) =>
    variant('hybrid, pgvector', n, (q) => search(dbVector, base, q.sentence, q.vector)),
  );
  const hybridArray = bases.map(([base, n]) =>
    variant('hybrid, real[] fallback', n, (q) => search(dbArray, base, q.sentence, q.vector)),
  );
  const hybridMain = dbMain
    ? bases.map(([base, n]) =>
        variant('hybrid, pgvector, tsv STORAGE MAIN (what-if)', n, (q) =>
          search(dbMain, base, q.sentence, q.vector),
        ),
      )
    : [];
  const lexicalMain = dbMain
    ? bases.map(([base, n]) =>
        variant('lexical, sentence query, tsv STORAGE MAIN (what-if)', n, (q) =>
          search(dbMain, base, q.sentence),
        ),
      )
    : [];
  // The library before the common-word rule: every chunk with any query word is ranked.
  const lexicalAll = bases.map(([base, n]) =>
    variant('lexical, sentence query, every word selects (before)', n, (q) =>
      search(dbVector, base, q.sentence, undefined, 2),
    ),
  );
  const hybridAll = bases.map(([base, n]) =>
    variant('hybrid, pgvector, every word selects (before)', n, (q) =>
      search(dbVector, base, q.sentence, q.vector, 2),
    ),
  );
  const groups = [
    lexical,
    selective,
    hybridVector,
    hybridArray,
    hybridMain,
    lexicalMain,
    lexicalAll,
    hybridAll,
  ];
  const variants = [floorSelect, floorLookup, ...groups.flat()];

  const measureStart = performance.now();
  for (const v of variants) for (const q of warmups) await v.run(q);
  const loadDuring: number[] = [loadavg()[0]!];
  const perRound = Math.ceil(QUERIES / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length]!);
    for (const v of order) {
      for (let i = round * perRound; i < Math.min(QUERIES, (round + 1) * perRound); i++) {
        const q = queries[i]!;
        const t0 = performance.now();
        const hits = await v.run(q);
        v.ms.push(performance.now() - t0);
        if (hits) {
          v.keys[i] = hits.map((h) => `${h.document_id}#${h.chunk_index}`);
          v.hits += hits.length;
          v.onTopic += hits.filter((h) => documentTopic.get(h.document_id) === q.topic).length;
        }
      }
    }
    loadDuring.push(loadavg()[0]!);
    console.log(
      `  round ${round + 1}/${ROUNDS} done, ${((performance.now() - measureStart) / 1000).toFixed(0)} s, ` +
        `load ${loadavg()[0]!.toFixed(2)}`,
    );
  }
  const measureSeconds = (performance.now() - measureStart) / 1000;

  // Tables.
  const floor = stats(floorLookup.ms).p50;
  console.log(
    `\n| search | chunks searched | p50 (ms) | p95 (ms) | p99 (ms) | mean (ms) | ÷ primary-key round trip (p50) | ÷ same search at ${thousands(SMALL)} chunks (p50 / p99) | hits on the query's topic |`,
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |');
  for (const v of variants) {
    const s = stats(v.ms);
    const first = groups.find((g) => g.includes(v))?.[0];
    const against =
      first === undefined
        ? ''
        : first === v
          ? 'baseline'
          : `${ratio(s.p50 / stats(first.ms).p50)} / ${ratio(s.p99 / stats(first.ms).p99)}`;
    // Only the big base holds documents of every topic.
    const topic =
      v.chunks === BIG && v.hits > 0 ? `${((100 * v.onTopic) / v.hits).toFixed(0)} %` : '';
    console.log(
      `| ${v.name} | ${v.chunks === undefined ? '' : thousands(v.chunks)} | ${fmt(s.p50)} | ` +
        `${fmt(s.p95)} | ${fmt(s.p99)} | ${fmt(s.mean)} | ` +
        `${v === floorLookup ? 'baseline' : ratio(s.p50 / floor)} | ${against} | ${topic} |`,
    );
  }

  const compare = (title: string, others: Variant[], note: (n: number) => string) => {
    console.log(
      `\n| chunks searched | pgvector p50 / p99 (ms) | ${title} p50 / p99 (ms) | ÷ pgvector (p50 / p99) | same top 5 as pgvector (set / order) | |`,
    );
    console.log('| ---: | ---: | ---: | --- | ---: | --- |');
    bases.forEach(([, n], i) => {
      const a = stats(hybridVector[i]!.ms);
      const b = stats(others[i]!.ms);
      let sameSet = 0;
      let sameOrder = 0;
      for (let q = 0; q < QUERIES; q++) {
        const x = hybridVector[i]!.keys[q] ?? [];
        const y = others[i]!.keys[q] ?? [];
        if (x.length === y.length && x.every((k) => y.includes(k))) sameSet++;
        if (x.join() === y.join()) sameOrder++;
      }
      console.log(
        `| ${thousands(n)} | ${fmt(a.p50)} / ${fmt(a.p99)} | ${fmt(b.p50)} / ${fmt(b.p99)} | ` +
          `${ratio(b.p50 / a.p50)} / ${ratio(b.p99 / a.p99)} | ` +
          `${((100 * sameSet) / QUERIES).toFixed(0)} % / ${((100 * sameOrder) / QUERIES).toFixed(0)} % | ` +
          `${note(n)} |`,
      );
    });
  };
  compare('real[] fallback', hybridArray, (n) =>
    n > ARRAY_EXACT_MAX_CHUNKS ? 'vector side over lexical candidates only' : 'exact',
  );
  if (hybridMain.length > 0) compare('tsv STORAGE MAIN', hybridMain, () => 'what-if');
  compare('every word selects (before)', hybridAll, () => 'before the common-word rule');

  const after = loadavg();
  console.log(
    `\nload average after: ${after.map((x) => x.toFixed(2)).join(' ')}; 1-min load during the ` +
      `measurement ${Math.min(...loadDuring).toFixed(2)}–${Math.max(...loadDuring).toFixed(2)}, ` +
      `over the whole run ${Math.min(...loadSamples).toFixed(2)}–${Math.max(...loadSamples).toFixed(2)}`,
  );
  console.log(
    `measurement ${measureSeconds.toFixed(0)} s; whole run so far ${((performance.now() - startedAt) / 1000).toFixed(0)} s`,
  );

  if (EXPLAIN) {
    // Where the time goes: reading the rows of the big base, and once more every value the
    // searches read from TOAST (medians of 5, no search involved).
    const owned = `FROM knowledge_chunks c WHERE c.user_id = $1 AND c.knowledge_base_id = ANY($2::text[])`;
    const p = [USER, [big.id]];
    const dims = `${quoteIdentifier(support.schema)}.vector_dims`;
    const parts: Array<[string, number]> = [
      ['count the rows', await median(dbVector, `SELECT count(*) ${owned}`, p)],
      ['read every tsvector once', await median(dbVector, `SELECT sum(length(c.tsv)) ${owned}`, p)],
      [
        'read every pgvector embedding once',
        await median(dbVector, `SELECT sum(${dims}(c.embedding)) ${owned}`, p),
      ],
      [
        'read every real[] embedding once',
        await median(dbArray, `SELECT sum(array_length(c.embedding, 1)) ${owned}`, p),
      ],
    ];
    if (dbMain) {
      parts.push([
        'read every tsvector once, tsv STORAGE MAIN',
        await median(dbMain, `SELECT sum(length(c.tsv)) ${owned}`, p),
      ]);
    }
    console.log(`\n| over the ${thousands(BIG)} chunks of the big base | ms (median of 5) |`);
    console.log('| --- | ---: |');
    for (const [label, ms] of parts) console.log(`| ${label} | ${fmt(ms)} |`);

    const q = queries[0]!;
    const show = async (
      title: string,
      db: Database,
      base: Base,
      text: string,
      vector?: number[],
    ) => {
      const sink: string[] = [];
      await search(explaining(db, sink), base, text, vector);
      console.log(`\n### ${title}\n\n\`\`\`\n${sink.join('\n\n')}\n\`\`\``);
    };
    console.log(`\nEXPLAIN (ANALYZE, BUFFERS) for query 0: "${q.sentence}"`);
    await show(`lexical, ${thousands(SMALL)} chunks`, dbVector, small, q.sentence);
    await show(`lexical, ${thousands(BIG)} chunks`, dbVector, big, q.sentence);
    await show(`lexical topic-word query, ${thousands(BIG)} chunks`, dbVector, big, q.selective);
    await show(
      `hybrid pgvector, ${thousands(SMALL)} chunks`,
      dbVector,
      small,
      q.sentence,
      q.vector,
    );
    await show(`hybrid pgvector, ${thousands(BIG)} chunks`, dbVector, big, q.sentence, q.vector);
    await show(`hybrid real[], ${thousands(MID)} chunks`, dbArray, mid, q.sentence, q.vector);
    await show(`hybrid real[], ${thousands(BIG)} chunks`, dbArray, big, q.sentence, q.vector);
    if (dbMain) {
      await show(
        `hybrid pgvector tsv STORAGE MAIN, ${thousands(BIG)} chunks`,
        dbMain,
        big,
        q.sentence,
        q.vector,
      );
    }
  }
} finally {
  for (const db of opened) await db.close();
  await cleanup();
  console.log(`\nwhole run ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
}

/**
 * Lexical knowledge-base search: `searchChunks` (full-text `tsvector @@ tsquery` on the GIN
 * index, ranked by `ts_rank`) against the naive alternative, a case-insensitive substring scan
 * (`ILIKE '%word%' OR ...`, ranked by how many query words a chunk contains), on the same chunks
 * and queries in the same run. PGlite always; PostgreSQL too when DATABASE_URL is set.
 *
 *   node --import tsx bench/knowledge-search.ts
 *
 * Env: DOCS (default 1000 documents of about 3 KB, about 4 chunks each), QUERIES (default 200),
 * SEED (default 7), DATABASE_URL (optional).
 */
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import {
  ingestDocument,
  KnowledgeRepository,
  searchChunks,
} from '../packages/knowledge/src/index.js';
import {
  createPgliteDatabase,
  createPostgresDatabase,
  migrate,
  type Database,
} from '../packages/store/src/index.js';

const docs = Number(process.env.DOCS ?? 1000);
const queries = Number(process.env.QUERIES ?? 200);
let state = Number(process.env.SEED ?? 7);

/** mulberry32: deterministic, so every run searches the same text. */
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
/** 2,000 syllable-built words: a vocabulary where some words are rare and some common. */
const SYL = 'ka lo mi ne ru sa ti vo xe zu'.split(' ');
const VOCAB = Array.from(
  { length: 2000 },
  (_, i) =>
    SYL[i % 10]! +
    SYL[Math.floor(i / 10) % 10]! +
    SYL[Math.floor(i / 100) % 10]! +
    (i >= 1000 ? 'n' : ''),
);
const word = () => VOCAB[Math.floor(VOCAB.length * random() ** 2)]!;
const sentence = () => Array.from({ length: 12 }, word).join(' ') + '.';
const documentText = () =>
  Array.from({ length: 8 }, () => Array.from({ length: 4 }, sentence).join(' ')).join('\n\n');

async function naiveSearch(db: Database, userId: string, baseIds: string[], query: string) {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  const likes = words.map((_, i) => `c.content ILIKE $${i + 3}`).join(' OR ');
  // Ranked like the real search (more query words matched first), so both return best hits.
  const rank = words.map((_, i) => `(c.content ILIKE $${i + 3})::int`).join(' + ');
  const { rows } = await db.query(
    `SELECT c.knowledge_base_id, c.document_id, d.name AS document_name, c.chunk_index, c.content
     FROM knowledge_chunks c JOIN knowledge_documents d ON d.document_id = c.document_id
     WHERE c.user_id = $1 AND c.knowledge_base_id = ANY($2::text[]) AND d.status = 'ready'
       AND (${likes})
     ORDER BY ${rank} DESC, c.document_id, c.chunk_index LIMIT 5`,
    [userId, baseIds, ...words.map((w) => `%${w}%`)],
  );
  return rows.length;
}

async function run(label: string, db: Database) {
  await migrate(db);
  const repo = new KnowledgeRepository(db);
  const base = await repo.createBase('bench', 'Bench');
  const ingestStart = performance.now();
  for (let i = 0; i < docs; i++) {
    const doc = await repo.addDocument('bench', base.id, {
      name: `doc-${i}`,
      type: 'text',
      content: documentText(),
    });
    await ingestDocument(repo, 'bench', doc!.id);
  }
  const ingestMs = performance.now() - ingestStart;
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM knowledge_chunks');
  await db.query('ANALYZE');
  const qs = Array.from({ length: queries }, () => `${word()} ${word()} ${word()}`);
  const time = async (fn: (q: string) => Promise<unknown>) => {
    for (const q of qs.slice(0, 10)) await fn(q); // warm-up
    const start = performance.now();
    for (const q of qs) await fn(q);
    return (performance.now() - start) / qs.length;
  };
  const fts = (q: string) =>
    searchChunks(db, { userId: 'bench', knowledgeBaseIds: [base.id], query: q });
  const naive = (q: string) => naiveSearch(db, 'bench', [base.id], q);
  // Alternate twice so drift on a shared machine hits both.
  const n1 = await time(naive);
  const f1 = await time(fts);
  const n2 = await time(naive);
  const f2 = await time(fts);
  const naiveMs = (n1 + n2) / 2;
  const ftsMs = (f1 + f2) / 2;
  console.log(
    `${label}: ${docs} documents, ${rows[0]!.n} chunks, ingestion ${(ingestMs / docs).toFixed(2)} ms/document; ` +
      `per query: ILIKE baseline ${naiveMs.toFixed(2)} ms, searchChunks ${ftsMs.toFixed(2)} ms, ` +
      `ratio ${(ftsMs / naiveMs).toFixed(2)}× (lower is better)`,
  );
  await db.close();
}

console.log(`node ${process.version}, ${cpus().length} cores, ${queries} queries of 3 words`);
await run('PGlite', await createPgliteDatabase());
const url = process.env.DATABASE_URL;
if (url) {
  const schema = `bench_kb_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  try {
    await run('PostgreSQL', await createPostgresDatabase({ url, schema, max: 2 }));
  } finally {
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
  }
}

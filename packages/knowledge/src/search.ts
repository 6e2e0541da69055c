import type { KnowledgeSearchHit } from '@agent-backend/protocol';
import {
  quoteIdentifier,
  vectorSupport,
  type Queryable,
  type VectorSupport,
} from '@agent-backend/store';
import { toArrayLiteral } from './vector-literals.js';

/** Most distinct terms of a query that reach the database; the rest are ignored. */
export const MAX_QUERY_TERMS = 32;

/** The `k` of reciprocal rank fusion: a hit at rank r of one list adds 1 / (k + r). */
export const RRF_K = 60;

/**
 * Without pgvector, the vector side compares the query with every embedded chunk of the
 * searched bases when they hold at most this many; beyond it, only with the best lexical
 * candidates (the cost of plain-SQL comparison grows with the chunks; docs/BENCHMARKS.md).
 */
export const ARRAY_EXACT_MAX_CHUNKS = 1_000;

/** A query's vector, from the same model as the chunks it is compared with. */
export interface QueryEmbedding {
  readonly model: string;
  /** Unit length. */
  readonly vector: readonly number[];
}

export interface SearchOptions {
  /** The owner: bases of other users are never searched, whatever ids are passed. */
  readonly userId: string;
  readonly knowledgeBaseIds: readonly string[];
  readonly query: string;
  /** @default 5 */
  readonly limit?: number;
  /** With it, the search is hybrid: full-text and vector similarity, fused by rank. */
  readonly embedding?: QueryEmbedding;
  /** {@link COMMON_WORD_SHARE} for this search; above 1, no word is common. */
  readonly commonWordShare?: number;
  /** Without pgvector: {@link ARRAY_EXACT_MAX_CHUNKS} for this search. */
  readonly arrayExactMaxChunks?: number;
}

/**
 * The query's words as a PostgreSQL `tsquery` source: lower-cased letter/digit runs, joined with
 * OR (`|`). OR rather than AND because a model asks in sentences; ranking puts the chunks
 * matching more words first. Quoting each word keeps the text from being read as operators.
 * @returns undefined when the query has no word at all.
 */
export function toTsQuery(query: string): string | undefined {
  return orQuery(queryWords(query));
}

/** The query's distinct lower-cased letter/digit runs, at most {@link MAX_QUERY_TERMS}. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, MAX_QUERY_TERMS);
}

/** Quoted words joined with OR (`|`), as a `tsquery` source; undefined for no words. */
export function orQuery(words: readonly string[]): string | undefined {
  return words.length === 0 ? undefined : words.map((w) => `'${w}'`).join(' | ');
}

/**
 * A word in at least this share of all chunks (by PostgreSQL's statistics of the `tsv` column)
 * is common: it does not choose which chunks are ranked, it only adds to their rank. The
 * `simple` configuration keeps stop words, and without this one "the" in a question makes the
 * query match, and `ts_rank` read, every chunk (docs/knowledge-base.md).
 */
export const COMMON_WORD_SHARE = 0.1;

/** How long the common words read from the statistics are used before they are read again. */
const COMMON_WORDS_TTL_MS = 5 * 60_000;

/**
 * `read(db)` remembered per database handle (a failed read is forgotten), read again after
 * `ttlMs`, or when the caller asks for a fresh value.
 */
export function perHandle<T>(read: (db: Queryable) => Promise<T>, ttlMs = Infinity) {
  const cache = new WeakMap<Queryable, { at: number; value: Promise<T> }>();
  return (db: Queryable, fresh = false): Promise<T> => {
    const cached = cache.get(db);
    if (cached && !fresh && Date.now() - cached.at < ttlMs) return cached.value;
    const value = read(db);
    cache.set(db, { at: Date.now(), value });
    value.catch(() => cache.delete(db));
    return value;
  };
}

/**
 * The words of the `tsv` column's most-common-elements statistics (gathered by ANALYZE, which
 * autovacuum runs as the table grows), each with the share of rows it is in. Empty before the
 * first ANALYZE (and on PGlite, which has no autovacuum), so search then ranks every matching
 * chunk, as it always did. `table` is another table with a `tsv` column (memories).
 */
export async function readWordShares(
  db: Queryable,
  table = 'knowledge_chunks',
): Promise<Map<string, number>> {
  const { rows } = await db.query<{ word: string; share: number }>(
    `SELECT e.word, f.share::float8 AS share
     FROM pg_stats s
     CROSS JOIN LATERAL unnest(s.most_common_elems::text::text[]) WITH ORDINALITY AS e(word, i)
     JOIN LATERAL unnest(s.most_common_elem_freqs) WITH ORDINALITY AS f(share, j) ON f.j = e.i
     WHERE s.schemaname = current_schema() AND s.tablename = $1
       AND s.attname = 'tsv'`,
    [table],
  );
  return new Map(rows.map((r) => [r.word, r.share]));
}

/** {@link readWordShares}, read again after {@link COMMON_WORDS_TTL_MS}. */
const cachedWordShares = perHandle((db) => readWordShares(db), COMMON_WORDS_TTL_MS);

interface HitRow extends Record<string, unknown> {
  knowledge_base_id: string;
  document_id: string;
  document_name: string;
  chunk_index: number;
  content: string;
  score: number;
}

const HIT_COLUMNS = `c.knowledge_base_id, c.document_id, d.name AS document_name, c.chunk_index,
  c.content`;
/** Chunks of ready documents of the searched bases of the user ($1 user, $2 base ids). */
const OWNED_READY = `c.user_id = $1 AND c.knowledge_base_id = ANY($2::text[]) AND d.status = 'ready'`;

const toHit = (r: HitRow): KnowledgeSearchHit => ({
  knowledge_base_id: r.knowledge_base_id,
  document_id: r.document_id,
  document_name: r.document_name,
  chunk_index: r.chunk_index,
  content: r.content,
  score: r.score,
});

/**
 * Best full-text matches, by `ts_rank` of all the query's words (the `simple` configuration:
 * no stemming, any language). When the query mixes common words ({@link readWordShares}) with
 * others, the chunks with one of the others are ranked first, and only those: the index then
 * finds a few chunks instead of all of them. If fewer than `limit` have one, the chunks with only
 * common words follow, ranked among themselves.
 */
async function lexicalHits(
  db: Queryable,
  options: SearchOptions,
  limit: number,
): Promise<KnowledgeSearchHit[]> {
  const words = queryWords(options.query);
  const all = orQuery(words);
  if (!all) return [];
  const shares = await cachedWordShares(db);
  const cutoff = options.commonWordShare ?? COMMON_WORD_SHARE;
  const informative = orQuery(words.filter((w) => (shares.get(w) ?? 0) < cutoff));
  /** Chunks matching `match` (and not `exclude`), ranked by all the words. */
  const ranked = async (match: string, n: number, exclude?: string) => {
    const { rows } = await db.query<HitRow>(
      `SELECT ${HIT_COLUMNS}, ts_rank(c.tsv, to_tsquery('simple', $4))::float8 AS score
       FROM knowledge_chunks c
       JOIN knowledge_documents d ON d.document_id = c.document_id
       WHERE ${OWNED_READY} AND c.tsv @@ to_tsquery('simple', $3)
         ${exclude ? `AND NOT c.tsv @@ to_tsquery('simple', $6)` : ''}
       ORDER BY score DESC, c.document_id, c.chunk_index
       LIMIT $5`,
      [options.userId, [...options.knowledgeBaseIds], match, all, n, ...(exclude ? [exclude] : [])],
    );
    return rows.map(toHit);
  };
  if (!informative || informative === all) return ranked(all, limit);
  const first = await ranked(informative, limit);
  // Fewer than `limit`: these are all the chunks with an informative word.
  if (first.length === limit) return first;
  return [...first, ...(await ranked(all, limit - first.length, informative))];
}

/**
 * Most similar chunks by cosine similarity (the score), among chunks embedded by the query's
 * model with vectors of its size. With pgvector: `<=>` over the `vector` column, exact (every
 * chunk of the searched bases; no approximate index, whose filtering by user and base would
 * lose results). Without: a dot product of the unit `real[]` vectors in plain SQL, exact up to
 * {@link ARRAY_EXACT_MAX_CHUNKS} chunks, else over `candidates` only.
 */
async function vectorHits(
  db: Queryable,
  options: SearchOptions & { embedding: QueryEmbedding },
  limit: number,
  candidates: readonly KnowledgeSearchHit[],
  support: VectorSupport,
): Promise<KnowledgeSearchHit[]> {
  const { model, vector } = options.embedding;
  const params: unknown[] = [
    options.userId,
    [...options.knowledgeBaseIds],
    toArrayLiteral(vector),
    model,
    vector.length,
    limit,
  ];
  let score: string;
  let restrict = '';
  if (support.kind === 'pgvector') {
    const s = quoteIdentifier(support.schema);
    score = `1 - (c.embedding OPERATOR(${s}.<=>) $3::real[]::${s}.vector)`;
  } else {
    score = '(SELECT sum(a * b) FROM unnest(c.embedding, $3::real[]) AS v(a, b))';
    const exactMax = options.arrayExactMaxChunks ?? ARRAY_EXACT_MAX_CHUNKS;
    // Counts no further than the limit: whether the bases are larger is all that matters.
    const { rows: counted } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT 1 FROM knowledge_chunks c
         WHERE c.user_id = $1 AND c.knowledge_base_id = ANY($2::text[])
           AND c.embedding_model = $3 AND c.embedding_dims = $4
         LIMIT $5) AS upto`,
      [options.userId, [...options.knowledgeBaseIds], model, vector.length, exactMax + 1],
    );
    if ((counted[0]?.n ?? 0) > exactMax) {
      if (candidates.length === 0) return [];
      restrict = `AND (c.document_id, c.chunk_index) IN (SELECT * FROM unnest($7::text[], $8::int[]))`;
      params.push(
        candidates.map((h) => h.document_id),
        candidates.map((h) => h.chunk_index),
      );
    }
  }
  const { rows } = await db.query<HitRow>(
    // Ordered by the output column, so the score is computed once per chunk.
    `SELECT ${HIT_COLUMNS}, (${score})::float8 AS score
     FROM knowledge_chunks c
     JOIN knowledge_documents d ON d.document_id = c.document_id
     WHERE ${OWNED_READY} AND c.embedding_model = $4 AND c.embedding_dims = $5 ${restrict}
     ORDER BY score DESC, c.document_id, c.chunk_index
     LIMIT $6`,
    params,
  );
  return rows.map(toHit);
}

/**
 * How this database stores embeddings, read once per database handle: it is settled at start.
 * `fresh` reads it again (a replica restarted with pgvector may have converted the column).
 */
const cachedVectorSupport = perHandle(vectorSupport);

/**
 * Reciprocal rank fusion: each list adds 1 / ({@link RRF_K} + rank) to a chunk's score (rank 1
 * first). Rank-based, so the full-text rank and the cosine similarity need no common scale; a
 * chunk found by both comes before one found by either alone at the same ranks.
 */
export function fuseByRank(
  lists: ReadonlyArray<readonly KnowledgeSearchHit[]>,
  limit: number,
): KnowledgeSearchHit[] {
  return fuseRanked(
    lists,
    (hit) => `${hit.document_id}\u0000${hit.chunk_index}`,
    (a, b) => a.document_id.localeCompare(b.document_id) || a.chunk_index - b.chunk_index,
    limit,
  );
}

/**
 * {@link fuseByRank} for hits of any kind: `key` says which hits are the same, `tieBreak`
 * orders equal scores.
 */
export function fuseRanked<H extends { readonly score: number }>(
  lists: ReadonlyArray<readonly H[]>,
  key: (hit: H) => string,
  tieBreak: (a: H, b: H) => number,
  limit: number,
): H[] {
  const fused = new Map<string, H>();
  for (const list of lists) {
    list.forEach((hit, i) => {
      const k = key(hit);
      const add = 1 / (RRF_K + i + 1);
      const seen = fused.get(k);
      fused.set(k, { ...hit, score: (seen?.score ?? 0) + add });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score || tieBreak(a, b)).slice(0, limit);
}

/**
 * Searches the `ready` chunks of the given bases of one user, best first. Without an
 * embedding: full-text only, `score` is `ts_rank`. With one: hybrid, the full-text and the
 * vector candidates (4 × `limit` each, at least 20) fused by {@link fuseByRank}, `score` is the
 * fused score. docs/knowledge-base.md.
 */
export async function searchChunks(
  db: Queryable,
  options: SearchOptions,
): Promise<KnowledgeSearchHit[]> {
  const limit = options.limit ?? 5;
  if (options.knowledgeBaseIds.length === 0) return [];
  if (!options.embedding) return lexicalHits(db, options, limit);
  const pool = Math.max(limit * 4, 20);
  const withEmbedding = { ...options, embedding: options.embedding };
  const search = async (support: VectorSupport) => {
    // pgvector needs no lexical candidates, so both sides run at once.
    if (support.kind === 'pgvector') {
      return Promise.all([
        lexicalHits(db, options, pool),
        vectorHits(db, withEmbedding, pool, [], support),
      ]);
    }
    const lexical = await lexicalHits(db, options, pool);
    return [lexical, await vectorHits(db, withEmbedding, pool, lexical, support)] as const;
  };
  const support = await cachedVectorSupport(db);
  let lists;
  try {
    lists = await search(support);
  } catch (error) {
    // Another replica may have changed the column's type since this one read it.
    const now = await cachedVectorSupport(db, true);
    if (now.kind === support.kind) throw error;
    lists = await search(now);
  }
  return fuseByRank(lists, limit);
}

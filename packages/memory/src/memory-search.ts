import type { Memory } from '@agent-backend/protocol';
import {
  fuseRanked,
  hybridCandidates,
  lexicalSearch,
  perHandle,
  readWordShares,
  toArrayLiteral,
  type QueryEmbedding,
} from '@agent-backend/search';
import {
  quoteIdentifier,
  vectorSupport,
  type Queryable,
  type VectorSupport,
} from '@agent-backend/store';

/**
 * A word in at least this share of all memories (by PostgreSQL's statistics of `memories.tsv`)
 * is common: it only adds to the rank of memories, it does not choose them, when the query has
 * other words. Memory's own setting: tuning the knowledge search leaves it as it is.
 */
export const MEMORY_COMMON_WORD_SHARE = 0.1;

/** How long the common words read from the statistics are used before they are read again. */
const COMMON_WORDS_TTL_MS = 5 * 60_000;

/**
 * Without pgvector, the vector side compares the query with every embedded memory of the user
 * when there are at most this many; beyond it, only with the best full-text candidates.
 */
export const MEMORY_ARRAY_EXACT_MAX = 1_000;

/** Candidates of each side of a hybrid search: this many times the limit, at least 20. */
const POOL_FACTOR = 4;
const MIN_POOL = 20;

/** A memory found by a search, with its score (higher is better). */
export interface MemoryHit extends Memory {
  readonly score: number;
}

/** A row of `memories` as the statements below select it. */
export interface MemoryRow extends Record<string, unknown> {
  memory_id: string;
  content: string;
  tags: string[];
  source_session_id: string | null;
  source_run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of {@link MemoryRow}, from `memories m`. */
export const MEMORY_COLUMNS = `m.memory_id, m.content, m.tags, m.source_session_id,
  m.source_run_id, m.created_at, m.updated_at`;

export function toMemory(row: MemoryRow): Memory {
  return {
    id: row.memory_id,
    text: row.content,
    tags: row.tags,
    source_session_id: row.source_session_id,
    source_run_id: row.source_run_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const toHit = (row: MemoryRow & { score: number }): MemoryHit => ({
  ...toMemory(row),
  score: row.score,
});

export interface MemorySearchOptions {
  /** The owner: only this user's memories are searched. */
  readonly userId: string;
  readonly query: string;
  /** @default 5 */
  readonly limit?: number;
  /** With it, the search is hybrid: full text and vector similarity, fused by rank. */
  readonly embedding?: QueryEmbedding;
  /** {@link MEMORY_COMMON_WORD_SHARE} for this search; above 1, no word is common. */
  readonly commonWordShare?: number;
  /** Without pgvector: {@link MEMORY_ARRAY_EXACT_MAX} for this search. */
  readonly arrayExactMax?: number;
}

/** What the statements need to know about the database, read once per handle. */
export interface SearchSettings {
  /** Words of the `tsv` statistics of `memories` with their share of rows. */
  readonly shares: ReadonlyMap<string, number>;
  readonly support: VectorSupport;
}

const cachedWordShares = perHandle((db) => readWordShares(db, 'memories'), COMMON_WORDS_TTL_MS);
const cachedVectorSupport = perHandle((db) => vectorSupport(db, 'memories'));

/**
 * The settings of `db` (cached per handle; `fresh` reads the vector storage again, as after
 * another replica converted the column).
 */
export async function searchSettings(db: Queryable, fresh = false): Promise<SearchSettings> {
  const [shares, support] = await Promise.all([
    cachedWordShares(db),
    cachedVectorSupport(db, fresh),
  ]);
  return { shares, support };
}

/**
 * Best full-text matches of one user's memories (text and tags), by `ts_rank`: the query's
 * words joined by OR, and common words (by the statistics of `memories.tsv`) only ranking,
 * never selecting, when the query has others (`lexicalSearch` of packages/search).
 */
export function lexicalMemoryHits(
  db: Queryable,
  options: MemorySearchOptions,
  limit: number,
  settings: SearchSettings,
): Promise<MemoryHit[]> {
  return lexicalSearch({
    query: options.query,
    limit,
    commonWordShare: options.commonWordShare ?? MEMORY_COMMON_WORD_SHARE,
    shares: async () => settings.shares,
    ranked: async (match, all, n, exclude) => {
      const { rows } = await db.query<MemoryRow & { score: number }>(
        `SELECT ${MEMORY_COLUMNS}, ts_rank(m.tsv, to_tsquery('simple', $3))::float8 AS score
         FROM memories m
         WHERE m.user_id = $1 AND m.tsv @@ to_tsquery('simple', $2)
           ${exclude ? `AND NOT m.tsv @@ to_tsquery('simple', $5)` : ''}
         ORDER BY score DESC, m.memory_id
         LIMIT $4`,
        [options.userId, match, all, n, ...(exclude ? [exclude] : [])],
      );
      return rows.map(toHit);
    },
  });
}

/**
 * Most similar memories of one user by cosine similarity (the score), among those embedded by
 * the query's model with vectors of its size: pgvector's inner product (`<#>`; the vectors are
 * unit length, so it is the cosine) over all of them, or without pgvector a plain-SQL dot
 * product, over all of them up to {@link MEMORY_ARRAY_EXACT_MAX} and over `candidates` beyond
 * it.
 */
export async function vectorMemoryHits(
  db: Queryable,
  options: MemorySearchOptions & { embedding: QueryEmbedding },
  limit: number,
  candidates: readonly MemoryHit[],
  support: VectorSupport,
): Promise<MemoryHit[]> {
  const { model, vector } = options.embedding;
  const params: unknown[] = [options.userId, toArrayLiteral(vector), model, vector.length, limit];
  let score: string;
  let restrict = '';
  if (support.kind === 'pgvector') {
    const s = quoteIdentifier(support.schema);
    // The inner product: the vectors are unit length (see `Embedder`), so it is the cosine,
    // and pgvector's `<#>` (its negation) does a third of the arithmetic of `<=>`.
    score = `-(m.embedding OPERATOR(${s}.<#>) $2::real[]::${s}.vector)`;
  } else {
    score = '(SELECT sum(a * b) FROM unnest(m.embedding, $2::real[]) AS v(a, b))';
    const exactMax = options.arrayExactMax ?? MEMORY_ARRAY_EXACT_MAX;
    const { rows: counted } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (
         SELECT 1 FROM memories m
         WHERE m.user_id = $1 AND m.embedding_model = $2 AND m.embedding_dims = $3
         LIMIT $4) AS upto`,
      [options.userId, model, vector.length, exactMax + 1],
    );
    if ((counted[0]?.n ?? 0) > exactMax) {
      if (candidates.length === 0) return [];
      restrict = 'AND m.memory_id = ANY($6::text[])';
      params.push(candidates.map((h) => h.id));
    }
  }
  const { rows } = await db.query<MemoryRow & { score: number }>(
    `SELECT ${MEMORY_COLUMNS}, (${score})::float8 AS score
     FROM memories m
     WHERE m.user_id = $1 AND m.embedding_model = $3 AND m.embedding_dims = $4 ${restrict}
     ORDER BY score DESC, m.memory_id
     LIMIT $5`,
    params,
  );
  return rows.map(toHit);
}

/**
 * Searches one user's memories, best first: full text alone without an embedding (`score` is
 * `ts_rank`), else hybrid, the full-text and vector candidates (4 × `limit` each, at least 20)
 * fused by reciprocal rank (`score` is the fused score).
 */
export async function searchMemories(
  db: Queryable,
  options: MemorySearchOptions,
): Promise<MemoryHit[]> {
  const limit = options.limit ?? 5;
  const settings = await searchSettings(db);
  if (!options.embedding) return lexicalMemoryHits(db, options, limit, settings);
  const withEmbedding = { ...options, embedding: options.embedding };
  const lists = await hybridCandidates<MemoryHit>({
    pool: Math.max(limit * POOL_FACTOR, MIN_POOL),
    lexical: (pool) => lexicalMemoryHits(db, options, pool, settings),
    vector: (pool, candidates, support) =>
      vectorMemoryHits(db, withEmbedding, pool, candidates, support),
    support: async (fresh) => (fresh ? (await searchSettings(db, true)).support : settings.support),
  });
  return fuseRanked(
    lists,
    (hit) => hit.id,
    (a, b) => a.id.localeCompare(b.id),
    limit,
  );
}

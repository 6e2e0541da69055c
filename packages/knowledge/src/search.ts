import type { KnowledgeSearchHit } from '@agent-backend/protocol';
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
 * Without pgvector, the vector side compares the query with every embedded chunk of the
 * searched bases when they hold at most this many; beyond it, only with the best lexical
 * candidates (the cost of plain-SQL comparison grows with the chunks; docs/BENCHMARKS.md).
 */
export const ARRAY_EXACT_MAX_CHUNKS = 1_000;

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
 * A word in at least this share of all chunks (by PostgreSQL's statistics of the `tsv` column)
 * is common: it does not choose which chunks are ranked, it only adds to their rank. The
 * `simple` configuration keeps stop words, and without this one "the" in a question makes the
 * query match, and `ts_rank` read, every chunk (docs/knowledge-base.md).
 */
export const COMMON_WORD_SHARE = 0.1;

/** How long the common words read from the statistics are used before they are read again. */
const COMMON_WORDS_TTL_MS = 5 * 60_000;

/** {@link readWordShares}, read again after {@link COMMON_WORDS_TTL_MS}. */
const cachedWordShares = perHandle(
  (db) => readWordShares(db, 'knowledge_chunks'),
  COMMON_WORDS_TTL_MS,
);

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
 * no stemming, any language), common words only ranking when the query has others
 * (`lexicalSearch` of packages/search, with {@link COMMON_WORD_SHARE}).
 */
function lexicalHits(
  db: Queryable,
  options: SearchOptions,
  limit: number,
): Promise<KnowledgeSearchHit[]> {
  return lexicalSearch({
    query: options.query,
    limit,
    commonWordShare: options.commonWordShare ?? COMMON_WORD_SHARE,
    shares: () => cachedWordShares(db),
    ranked: async (match, all, n, exclude) => {
      const { rows } = await db.query<HitRow>(
        `SELECT ${HIT_COLUMNS}, ts_rank(c.tsv, to_tsquery('simple', $4))::float8 AS score
         FROM knowledge_chunks c
         JOIN knowledge_documents d ON d.document_id = c.document_id
         WHERE ${OWNED_READY} AND c.tsv @@ to_tsquery('simple', $3)
           ${exclude ? `AND NOT c.tsv @@ to_tsquery('simple', $6)` : ''}
         ORDER BY score DESC, c.document_id, c.chunk_index
         LIMIT $5`,
        [
          options.userId,
          [...options.knowledgeBaseIds],
          match,
          all,
          n,
          ...(exclude ? [exclude] : []),
        ],
      );
      return rows.map(toHit);
    },
  });
}

/**
 * Most similar chunks by cosine similarity (the score), among chunks embedded by the query's
 * model with vectors of its size. With pgvector: the inner product (`<#>`; the vectors are unit
 * length, so it is the cosine) over the `vector` column, exact (every chunk of the searched
 * bases; no approximate index, whose filtering by user and base would lose results). Without: a dot product of the unit `real[]` vectors in plain SQL, exact up to
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
    // The inner product: the vectors are unit length (see `Embedder`), so it is the cosine,
    // and pgvector's `<#>` (its negation) does a third of the arithmetic of `<=>`.
    score = `-(c.embedding OPERATOR(${s}.<#>) $3::real[]::${s}.vector)`;
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
 * Reciprocal rank fusion of chunk lists (`fuseRanked` of packages/search): a chunk found by
 * both the full-text and the vector side comes before one found by either alone at the same
 * ranks; equal scores in document and chunk order.
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
  const withEmbedding = { ...options, embedding: options.embedding };
  const lists = await hybridCandidates<KnowledgeSearchHit>({
    pool: Math.max(limit * 4, 20),
    lexical: (pool) => lexicalHits(db, options, pool),
    vector: (pool, candidates, support) => vectorHits(db, withEmbedding, pool, candidates, support),
    support: (fresh) => cachedVectorSupport(db, fresh),
  });
  return fuseByRank(lists, limit);
}

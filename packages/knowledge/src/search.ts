import type { KnowledgeSearchHit } from '@agent-backend/protocol';
import type { Queryable } from '@agent-backend/store';

/** Most distinct terms of a query that reach the database; the rest are ignored. */
export const MAX_QUERY_TERMS = 32;

export interface SearchOptions {
  /** The owner: bases of other users are never searched, whatever ids are passed. */
  readonly userId: string;
  readonly knowledgeBaseIds: readonly string[];
  readonly query: string;
  /** @default 5 */
  readonly limit?: number;
}

/**
 * The query's words as a PostgreSQL `tsquery` source: lower-cased letter/digit runs, joined with
 * OR (`|`). OR rather than AND because a model asks in sentences; ranking puts the chunks
 * matching more words first. Quoting each word keeps the text from being read as operators.
 * @returns undefined when the query has no word at all.
 */
export function toTsQuery(query: string): string | undefined {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
  if (words.length === 0) return undefined;
  return words
    .slice(0, MAX_QUERY_TERMS)
    .map((w) => `'${w}'`)
    .join(' | ');
}

interface HitRow extends Record<string, unknown> {
  knowledge_base_id: string;
  document_id: string;
  document_name: string;
  chunk_index: number;
  content: string;
  score: number;
}

/**
 * Lexical search over the `ready` chunks of the given bases of one user: PostgreSQL full-text
 * search with the `simple` configuration (no stemming, no stop words: it works the same for
 * every language and on PGlite), ranked by `ts_rank`, best first. Vector similarity joins this
 * in a later step (docs/knowledge-base.md).
 */
export async function searchChunks(
  db: Queryable,
  options: SearchOptions,
): Promise<KnowledgeSearchHit[]> {
  const tsQuery = toTsQuery(options.query);
  if (!tsQuery || options.knowledgeBaseIds.length === 0) return [];
  const { rows } = await db.query<HitRow>(
    `SELECT c.knowledge_base_id, c.document_id, d.name AS document_name, c.chunk_index,
            c.content, ts_rank(c.tsv, q)::float8 AS score
     FROM knowledge_chunks c
     JOIN knowledge_documents d ON d.document_id = c.document_id
     CROSS JOIN to_tsquery('simple', $3) AS q
     WHERE c.user_id = $1 AND c.knowledge_base_id = ANY($2::text[])
       AND d.status = 'ready' AND c.tsv @@ q
     ORDER BY score DESC, c.document_id, c.chunk_index
     LIMIT $4`,
    [options.userId, [...options.knowledgeBaseIds], tsQuery, options.limit ?? 5],
  );
  return rows.map((r) => ({
    knowledge_base_id: r.knowledge_base_id,
    document_id: r.document_id,
    document_name: r.document_name,
    chunk_index: r.chunk_index,
    content: r.content,
    score: r.score,
  }));
}

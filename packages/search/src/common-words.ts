import type { Queryable } from '@agent-backend/store';
import { orQuery, queryWords } from './query-words.js';

/**
 * The words of the `tsv` column's most-common-elements statistics of `table` (gathered by
 * ANALYZE, which autovacuum runs as the table grows), each with the share of rows it is in.
 * Empty before the first ANALYZE (and on PGlite, which has no autovacuum), so a search then
 * ranks every matching row.
 */
export async function readWordShares(db: Queryable, table: string): Promise<Map<string, number>> {
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

/**
 * One full-text statement: the rows matching the `tsquery` source `match` (and not `exclude`),
 * ranked by all the query's words (`all`), at most `limit`.
 */
export type RankedMatches<H> = (
  match: string,
  all: string,
  limit: number,
  exclude?: string,
) => Promise<H[]>;

export interface LexicalSearch<H> {
  readonly query: string;
  /** At most this many hits. */
  readonly limit: number;
  /** A word in at least this share of the rows is common; above 1, no word is. */
  readonly commonWordShare: number;
  /** The words' shares of the rows ({@link readWordShares}), read once the query has words. */
  shares(): Promise<ReadonlyMap<string, number>>;
  readonly ranked: RankedMatches<H>;
}

/**
 * Best full-text matches of a query by all its words. When the query mixes common words with
 * others, the rows with one of the others are ranked first, and only those: the index then finds
 * a few rows instead of all of them (the `simple` configuration keeps stop words, and without
 * this one "the" in a question makes the query match, and `ts_rank` read, every row). If fewer
 * than `limit` have one, the rows with only common words follow, ranked among themselves.
 */
export async function lexicalSearch<H>(search: LexicalSearch<H>): Promise<H[]> {
  const words = queryWords(search.query);
  const all = orQuery(words);
  if (!all) return [];
  const shares = await search.shares();
  const informative = orQuery(words.filter((w) => (shares.get(w) ?? 0) < search.commonWordShare));
  if (!informative || informative === all) return search.ranked(all, all, search.limit);
  const first = await search.ranked(informative, all, search.limit);
  // Fewer than `limit`: these are all the rows with an informative word.
  if (first.length === search.limit) return first;
  const rest = await search.ranked(all, all, search.limit - first.length, informative);
  return [...first, ...rest];
}

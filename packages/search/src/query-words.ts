/** Most distinct terms of a query that reach the database; the rest are ignored. */
export const MAX_QUERY_TERMS = 32;

/** The query's distinct lower-cased letter/digit runs, at most {@link MAX_QUERY_TERMS}. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, MAX_QUERY_TERMS);
}

/** Quoted words joined with OR (`|`), as a `tsquery` source; undefined for no words. */
export function orQuery(words: readonly string[]): string | undefined {
  return words.length === 0 ? undefined : words.map((w) => `'${w}'`).join(' | ');
}

/**
 * The query's words as a PostgreSQL `tsquery` source: lower-cased letter/digit runs, joined with
 * OR (`|`). OR rather than AND because a model asks in sentences; ranking puts the rows matching
 * more words first. Quoting each word keeps the text from being read as operators.
 * @returns undefined when the query has no word at all.
 */
export function toTsQuery(query: string): string | undefined {
  return orQuery(queryWords(query));
}

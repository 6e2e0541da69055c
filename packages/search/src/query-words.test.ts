import { describe, expect, it } from 'vitest';
import { MAX_QUERY_TERMS, queryWords, toTsQuery } from './query-words.js';

describe('toTsQuery', () => {
  it('quotes distinct lower-cased words joined by OR', () => {
    expect(toTsQuery("Refund's policy, REFUND!")).toBe("'refund' | 's' | 'policy'");
    expect(toTsQuery('  ?! ')).toBeUndefined();
  });

  it('keeps at most MAX_QUERY_TERMS distinct words, in order', () => {
    const words = Array.from({ length: MAX_QUERY_TERMS + 5 }, (_, i) => `w${i}`);
    expect(queryWords(words.join(' '))).toEqual(words.slice(0, MAX_QUERY_TERMS));
  });
});

import { describe, expect, it } from 'vitest';
import { lexicalSearch, type RankedMatches } from './common-words.js';

/** Rows with their words; `ranked` answers as a full-text statement would, by words shared. */
const ROWS = [
  { id: 'r1', words: ['the', 'refund', 'policy'] },
  { id: 'r2', words: ['the', 'shipping'] },
  { id: 'r3', words: ['the', 'weather'] },
];

function search(query: string, limit: number, shares: Record<string, number>, cutoff = 0.5) {
  const statements: Array<{ match: string; exclude?: string }> = [];
  const words = (source: string) => source.split(' | ').map((w) => w.slice(1, -1));
  const ranked: RankedMatches<string> = async (match, all, n, exclude) => {
    statements.push({ match, ...(exclude ? { exclude } : {}) });
    const hits = ROWS.filter(
      (r) =>
        words(match).some((w) => r.words.includes(w)) &&
        !(exclude && words(exclude).some((w) => r.words.includes(w))),
    );
    const rank = (r: (typeof ROWS)[number]) => words(all).filter((w) => r.words.includes(w)).length;
    return hits
      .sort((a, b) => rank(b) - rank(a) || a.id.localeCompare(b.id))
      .slice(0, n)
      .map((r) => r.id);
  };
  const hits = lexicalSearch({
    query,
    limit,
    commonWordShare: cutoff,
    shares: async () => new Map(Object.entries(shares)),
    ranked,
  });
  return { hits, statements };
}

describe('lexicalSearch', () => {
  it('selects by the informative words first, then fills with rows of common words only', async () => {
    const { hits, statements } = search('The refund', 3, { the: 0.9 });
    expect(await hits).toEqual(['r1', 'r2', 'r3']);
    expect(statements).toEqual([
      { match: "'refund'" },
      { match: "'the' | 'refund'", exclude: "'refund'" },
    ]);
  });

  it('needs one statement when the informative words fill the limit, or none are common', async () => {
    const full = search('the refund', 1, { the: 0.9 });
    expect(await full.hits).toEqual(['r1']);
    expect(full.statements).toHaveLength(1);
    const noneCommon = search('the refund', 3, { the: 0.9 }, 2);
    expect(await noneCommon.hits).toEqual(['r1', 'r2', 'r3']);
    expect(noneCommon.statements).toEqual([{ match: "'the' | 'refund'" }]);
  });

  it('runs no statement for a query without words', async () => {
    const { hits, statements } = search('?! ', 3, {});
    expect(await hits).toEqual([]);
    expect(statements).toEqual([]);
  });
});

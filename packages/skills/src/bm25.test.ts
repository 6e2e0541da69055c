import { describe, expect, it } from 'vitest';
import { Bm25Index, countTerms } from './bm25.js';

describe('Bm25Index', () => {
  it('scores as Okapi BM25 (k1 1.2, b 0.75) with the always-positive idf', () => {
    const index = new Bm25Index([countTerms(['a', 'b']), countTerms(['a', 'c', 'c'])]);
    const [d0, d1] = index.score([
      { term: 'a', weight: 1 },
      { term: 'c', weight: 1 },
      { term: 'never-indexed', weight: 1 },
    ]);
    // avgdl 2.5; idf(a) = ln(1 + 0.5/2.5), idf(c) = ln(1 + 1.5/1.5)
    const norm0 = 1.2 * (0.25 + (0.75 * 2) / 2.5);
    const norm1 = 1.2 * (0.25 + (0.75 * 3) / 2.5);
    expect(d0!.score).toBeCloseTo((Math.log(1.2) * 2.2) / (1 + norm0), 12);
    expect(d1!.score).toBeCloseTo(
      (Math.log(1.2) * 2.2) / (1 + norm1) + (Math.log(2) * 2 * 2.2) / (2 + norm1),
      12,
    );
    expect([d0!.matchedTerms, d1!.matchedTerms]).toEqual([1, 2]);
  });

  it('scales a term by its weight and leaves documents without query terms at zero', () => {
    const index = new Bm25Index([countTerms(['x']), countTerms(['y'])]);
    const full = index.score([{ term: 'x', weight: 1 }])[0]!.score;
    const half = index.score([{ term: 'x', weight: 0.5 }]);
    expect(half[0]!.score).toBeCloseTo(full / 2, 12);
    expect(half[1]).toEqual({ score: 0, matchedTerms: 0 });
    expect(new Bm25Index([]).score([{ term: 'x', weight: 1 }])).toEqual([]);
  });
});

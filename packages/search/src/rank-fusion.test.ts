import { describe, expect, it } from 'vitest';
import { fuseRanked, RRF_K } from './rank-fusion.js';

describe('fuseRanked', () => {
  const hit = (id: string) => ({ id, score: 0 });
  const fuse = (lists: Array<Array<{ id: string; score: number }>>, limit: number) =>
    fuseRanked(
      lists,
      (h) => h.id,
      (a, b) => a.id.localeCompare(b.id),
      limit,
    );

  it('adds 1 / (RRF_K + rank) per list, hits found twice first, ties by the tie-break', () => {
    const fused = fuse(
      [
        [hit('b'), hit('x')],
        [hit('a'), hit('x')],
      ],
      3,
    );
    expect(fused.map((h) => h.id)).toEqual(['x', 'a', 'b']);
    expect(fused[0]!.score).toBeCloseTo(2 / (RRF_K + 2));
    expect(fused[1]!.score).toBeCloseTo(1 / (RRF_K + 1));
    expect(fuse([[hit('a')], []], 0)).toEqual([]);
  });
});

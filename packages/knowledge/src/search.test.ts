import { describe, expect, it } from 'vitest';
import { fuseByRank } from './search.js';

describe('fuseByRank', () => {
  const hit = (document_id: string, score = 0) => ({
    knowledge_base_id: 'kb',
    document_id,
    document_name: 'd',
    chunk_index: 0,
    content: '',
    score,
  });
  it('adds 1 / (60 + rank) per list and puts chunks found twice first', () => {
    const fused = fuseByRank(
      [
        [hit('a'), hit('b')],
        [hit('c'), hit('b')],
      ],
      3,
    );
    expect(fused.map((h) => h.document_id)).toEqual(['b', 'a', 'c']);
    expect(fused[0]!.score).toBeCloseTo(2 / 62);
    expect(fused[1]!.score).toBeCloseTo(1 / 61);
    expect(fuseByRank([[hit('a')], []], 0)).toEqual([]);
  });
});

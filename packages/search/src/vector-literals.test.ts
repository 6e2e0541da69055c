import { describe, expect, it } from 'vitest';
import { denseEmbedding } from '@agent-backend/testing';
import { toArrayLiteral, toArrayLiterals } from './vector-literals.js';

describe('toArrayLiterals', () => {
  it('writes each vector as toArrayLiteral does, null for null, small and large batches', async () => {
    for (const [count, dims] of [
      [3, 8],
      [40, 1536],
    ] as const) {
      const vectors = Array.from({ length: count }, (_, i) =>
        i % 7 === 3 ? null : denseEmbedding(`text ${i}`, dims),
      );
      const literals = await toArrayLiterals(vectors);
      expect(literals).toEqual(vectors.map((v) => (v ? toArrayLiteral(v) : null)));
    }
    expect(await toArrayLiterals([])).toEqual([]);
    expect(toArrayLiteral([0.1, -2, 1e-40])).toBe(`{${Math.fround(0.1)},-2,${Math.fround(1e-40)}}`);
  });
});

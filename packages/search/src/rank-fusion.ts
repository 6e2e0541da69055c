/** The `k` of reciprocal rank fusion: a hit at rank r of one list adds 1 / (k + r). */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each list adds 1 / ({@link RRF_K} + rank) to a hit's score (rank 1
 * first). Rank-based, so a full-text rank and a cosine similarity need no common scale; a hit
 * found by both lists comes before one found by either alone at the same ranks. `key` says
 * which hits are the same, `tieBreak` orders equal scores.
 */
export function fuseRanked<H extends { readonly score: number }>(
  lists: ReadonlyArray<readonly H[]>,
  key: (hit: H) => string,
  tieBreak: (a: H, b: H) => number,
  limit: number,
): H[] {
  const fused = new Map<string, H>();
  for (const list of lists) {
    list.forEach((hit, i) => {
      const k = key(hit);
      const add = 1 / (RRF_K + i + 1);
      const seen = fused.get(k);
      fused.set(k, { ...hit, score: (seen?.score ?? 0) + add });
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score || tieBreak(a, b)).slice(0, limit);
}

import type { VectorSupport } from '@agent-backend/store';

/** A query's vector, from the same model as the rows it is compared with. */
export interface QueryEmbedding {
  readonly model: string;
  /** Unit length. */
  readonly vector: readonly number[];
}

/** The two sides of a hybrid search over one table. */
export interface HybridSides<H> {
  /** Candidates each side returns. */
  readonly pool: number;
  lexical(pool: number): Promise<H[]>;
  /**
   * The most similar rows. Without pgvector it may compare the query with the lexical
   * `candidates` only (with pgvector there are none: both sides run at once).
   */
  vector(pool: number, candidates: readonly H[], support: VectorSupport): Promise<H[]>;
  /** How the database stores the table's vectors; `fresh` reads it again. */
  support(fresh: boolean): Promise<VectorSupport>;
}

/**
 * The lexical and the vector candidates of a hybrid search, for rank fusion. If a side fails
 * and the vector storage has changed since it was read (another replica restarted with
 * pgvector may have converted the column), both run again with the new storage.
 */
export async function hybridCandidates<H>(
  sides: HybridSides<H>,
): Promise<ReadonlyArray<readonly H[]>> {
  const search = async (support: VectorSupport) => {
    // pgvector needs no lexical candidates, so both sides run at once.
    if (support.kind === 'pgvector') {
      return Promise.all([sides.lexical(sides.pool), sides.vector(sides.pool, [], support)]);
    }
    const lexical = await sides.lexical(sides.pool);
    return [lexical, await sides.vector(sides.pool, lexical, support)];
  };
  const support = await sides.support(false);
  try {
    return await search(support);
  } catch (error) {
    const now = await sides.support(true);
    if (now.kind === support.kind) throw error;
    return search(now);
  }
}

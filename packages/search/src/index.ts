/**
 * The hybrid-search kit that knowledge and memory build their searches from, and the one
 * embeddings client. It holds no tuning: each search passes its own thresholds and pool sizes,
 * so tuning one leaves the other as it was. Design: docs/knowledge-base.md, docs/memory.md.
 */
export {
  lexicalSearch,
  readWordShares,
  type LexicalSearch,
  type RankedMatches,
} from './common-words.js';
export {
  createOpenAiEmbedder,
  embedderFromSettings,
  EmbeddingError,
  normalize,
  type Embedder,
  type EmbeddingsSettings,
  type OpenAiEmbedderOptions,
} from './embeddings.js';
export { hybridCandidates, type HybridSides, type QueryEmbedding } from './hybrid-search.js';
export { perHandle } from './per-handle.js';
export { MAX_QUERY_TERMS, orQuery, queryWords, toTsQuery } from './query-words.js';
export { fuseRanked, RRF_K } from './rank-fusion.js';
export { toArrayLiteral, toArrayLiterals } from './vector-literals.js';

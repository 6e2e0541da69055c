export { splitText } from './split-text.js';
export type { Chunk } from './pack.js';
export {
  resolveSplitOptions,
  ChunkLimitError,
  InvalidSplitOptionsError,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_CHUNK_OVERLAP,
  DEFAULT_DELIMITER,
  type SplitOptions,
  type ResolvedSplitOptions,
} from './options.js';

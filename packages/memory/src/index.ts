/**
 * Long-term memory: durable memories per user, one row each, searched like the
 * knowledge base (full text, plus vectors when an embeddings endpoint is configured), offered to
 * the model as `memory_search`, `memory_save` and `memory_delete`, and summarized in the system
 * prompt of runs with memory on. Design: docs/memory.md.
 */
export { decodeCursor, encodeCursor, InvalidCursorError, type ListPosition } from './cursor.js';
export {
  MAX_QUERY_CHARS,
  MemoryRepository,
  MissingUserError,
  NEAR_DUPLICATE_COSINE,
  NEAR_DUPLICATE_WORDS,
  type ListOptions,
  type MemoryRepositoryOptions,
  type SaveInput,
  type SaveOutcome,
} from './memory-repository.js';
export {
  MEMORY_ARRAY_EXACT_MAX,
  MEMORY_COMMON_WORD_SHARE,
  searchMemories,
  type MemoryHit,
  type MemorySearchOptions,
} from './memory-search.js';
export {
  cleanTags,
  InvalidMemoryError,
  MAX_STORED_TAGS,
  memoryKey,
  normalizeMemoryText,
  wordSimilarity,
} from './memory-text.js';
export {
  MEMORY_DELETE_TOOL,
  MEMORY_SAVE_TOOL,
  MEMORY_SEARCH_TOOL,
  memoryTools,
  type MemoryToolsScope,
} from './memory-tools.js';
export {
  DEFAULT_MEMORY_PROMPT_LIMITS,
  memoryPromptSection,
  type MemoryPromptLimits,
} from './prompt-section.js';
export { memoryCapability, type MemoryCapability, type MemoryDeps } from './capability.js';

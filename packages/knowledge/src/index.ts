/**
 * Knowledge bases: a user's documents, chunked by the preview's splitter and embedded
 * in the worker, stored in the durable store and searched (full text, plus vectors when an
 * embeddings endpoint is configured) by the agent's `search_knowledge_base`.
 * Design and open choices: docs/knowledge-base.md.
 */
export {
  KnowledgeRepository,
  type DocumentStatus,
  type DocumentType,
  type StoredDocument,
} from './knowledge-repository.js';
export { ingestDocument, type IngestOptions, type IngestOutcome } from './ingest.js';
export {
  ARRAY_EXACT_MAX_CHUNKS,
  COMMON_WORD_SHARE,
  fuseByRank,
  searchChunks,
  type SearchOptions,
} from './search.js';
export {
  knowledgeSearcher,
  knowledgeToolSource,
  SEARCH_KNOWLEDGE_BASE_TOOL,
  searchKnowledgeBaseTool,
  type KnowledgeSearcher,
  type KnowledgeSearcherOptions,
} from './search-tool.js';

/** The job queue the API fills when a document is added and the worker processes. */
export const KB_INGEST_QUEUE = 'kb-ingest';

/**
 * Attempts of one ingestion job. Retries wait 1, 2, 4, 8 and 16 s (the queue doubles the
 * delay), so an embeddings endpoint may be down for about half a minute (plus the client's own
 * two retries per request) before the document is marked `failed`.
 */
export const KB_INGEST_ATTEMPTS = 6;
export { knowledgeCapability, type KnowledgeCapability, type KnowledgeDeps } from './capability.js';
export { splitDocument, type SplitJob } from './split-document.js';

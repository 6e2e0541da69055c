/**
 * Knowledge bases (issue 8): a user's documents, chunked by the preview's splitter in the worker,
 * stored in the durable store and searched lexically by the agent's `search_knowledge_base`.
 * Design and open choices: docs/knowledge-base.md.
 */
export {
  KnowledgeRepository,
  type DocumentStatus,
  type DocumentType,
  type StoredDocument,
} from './knowledge-repository.js';
export { ingestDocument, type IngestOutcome } from './ingest.js';
export { MAX_QUERY_TERMS, searchChunks, toTsQuery, type SearchOptions } from './search.js';
export {
  knowledgeToolSource,
  SEARCH_KNOWLEDGE_BASE_TOOL,
  searchKnowledgeBaseTool,
} from './search-tool.js';

/** The job queue the API fills when a document is added and the worker processes. */
export const KB_INGEST_QUEUE = 'kb-ingest';

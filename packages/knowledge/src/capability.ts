import type { Capability } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import type { Queryable } from '@agent-backend/store';
import {
  knowledgeSearcher,
  knowledgeToolSource,
  type KnowledgeSearcher,
  type KnowledgeSearcherOptions,
} from './search-tool.js';

export interface KnowledgeDeps {
  readonly db: Queryable;
  /** The service's one embeddings client; absent: search is full text only. */
  readonly embedder?: KnowledgeSearcherOptions['embedder'];
  readonly logger: Logger;
  /** A searcher made elsewhere; absent: one on `db` and `embedder`. */
  readonly search?: KnowledgeSearcher;
}

export interface KnowledgeCapability extends Capability {
  /** Knowledge search (shared with the HTTP search endpoint). */
  readonly search: KnowledgeSearcher;
}

/** `search_knowledge_base` for runs naming knowledge bases (docs/knowledge-base.md). */
export function knowledgeCapability(deps: KnowledgeDeps): KnowledgeCapability {
  const search =
    deps.search ??
    knowledgeSearcher(deps.db, {
      ...(deps.embedder ? { embedder: deps.embedder } : {}),
      onEmbeddingError: (error) =>
        deps.logger.warn(
          { err: error },
          'query embedding failed; knowledge search used full text only',
        ),
    });
  return { search, source: knowledgeToolSource(search) };
}

import { defineTool, type AgentTool, type ToolSource } from '@agent-backend/agent-runtime';
import { SearchKnowledgeBaseArgs, type KnowledgeSearchHit } from '@agent-backend/protocol';
import type { Queryable } from '@agent-backend/store';
import type { Embedder, QueryEmbedding } from '@agent-backend/search';
import { searchChunks, type SearchOptions } from './search.js';

/** The tool's name, fixed by the spec (`knowledge_base_ids`). */
export const SEARCH_KNOWLEDGE_BASE_TOOL = 'search_knowledge_base';

export interface KnowledgeSearcherOptions {
  /** Embeds queries; without one, search is full-text only. */
  readonly embedder?: Embedder;
  /** Told when a query could not be embedded and the search fell back to full text. */
  readonly onEmbeddingError?: (error: unknown) => void;
}

/** One search of a user's bases: the query is embedded here when embeddings are configured. */
export type KnowledgeSearcher = (
  search: Omit<SearchOptions, 'embedding'>,
  signal?: AbortSignal,
) => Promise<KnowledgeSearchHit[]>;

/**
 * Searches as {@link searchChunks}, embedding the query first when an embedder is configured.
 * An embeddings endpoint that fails does not fail the search: it runs on full text alone
 * (reported through `onEmbeddingError`), since words still find most passages.
 */
export function knowledgeSearcher(
  db: Queryable,
  options: KnowledgeSearcherOptions = {},
): KnowledgeSearcher {
  const { embedder } = options;
  return async (search, signal) => {
    let embedding: QueryEmbedding | undefined;
    if (embedder && search.knowledgeBaseIds.length > 0) {
      try {
        const [vector] = await embedder.embed([search.query], signal);
        if (vector) embedding = { model: embedder.model, vector };
      } catch (error) {
        options.onEmbeddingError?.(error);
      }
    }
    return searchChunks(db, { ...search, embedding });
  };
}

/**
 * The `search_knowledge_base` tool of one run: searches only `knowledgeBaseIds`, and only the
 * ones of `userId` (the token's user), so another user's base id yields no hit and no hint that
 * it exists. Read-only, so it is offered in every mode. The hits go to the model as JSON.
 */
export function searchKnowledgeBaseTool(
  search: KnowledgeSearcher,
  userId: string,
  knowledgeBaseIds: readonly string[],
): AgentTool {
  return defineTool({
    name: SEARCH_KNOWLEDGE_BASE_TOOL,
    description:
      "Searches the user's knowledge bases attached to this conversation and returns the most " +
      'relevant passages (document name, chunk index, content, score). Ask with the words ' +
      'the text would use, or describe what you are looking for.',
    schema: SearchKnowledgeBaseArgs,
    writes: false,
    repeatSafe: true,
    async run(args, context) {
      const hits = await search(
        { userId, knowledgeBaseIds, query: args.query, limit: args.limit },
        context.signal,
      );
      if (hits.length === 0) return { content: 'No matching passages found.' };
      return { content: JSON.stringify({ results: hits }) };
    },
  });
}

/**
 * Adds `search_knowledge_base` to runs whose request names knowledge bases; the
 * user id comes from the run (the verified token), never from the request.
 */
export function knowledgeToolSource(search: KnowledgeSearcher): ToolSource {
  return (run) => {
    const ids = run.request.capabilities.knowledgeBaseIds;
    return Promise.resolve(
      ids.length > 0 ? [searchKnowledgeBaseTool(search, run.userId, ids)] : [],
    );
  };
}

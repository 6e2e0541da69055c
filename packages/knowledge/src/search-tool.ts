import { defineTool, type AgentTool, type ToolSource } from '@agent-backend/agent-runtime';
import { SearchKnowledgeBaseArgs } from '@agent-backend/protocol';
import type { Queryable } from '@agent-backend/store';
import { searchChunks } from './search.js';

/** The tool's name, fixed by the spec (`knowledge_base_ids`). */
export const SEARCH_KNOWLEDGE_BASE_TOOL = 'search_knowledge_base';

/**
 * The `search_knowledge_base` tool of one run: searches only `knowledgeBaseIds`, and only the
 * ones of `userId` (the token's user), so another user's base id yields no hit and no hint that
 * it exists. Read-only, so it is offered in every mode. The hits go to the model as JSON.
 */
export function searchKnowledgeBaseTool(
  db: Queryable,
  userId: string,
  knowledgeBaseIds: readonly string[],
): AgentTool {
  return defineTool({
    name: SEARCH_KNOWLEDGE_BASE_TOOL,
    description:
      "Searches the user's knowledge bases attached to this conversation and returns the most " +
      'relevant passages (document name, chunk index, content, score). Use keywords that would ' +
      'appear in the text.',
    schema: SearchKnowledgeBaseArgs,
    writes: false,
    async run(args) {
      const hits = await searchChunks(db, {
        userId,
        knowledgeBaseIds,
        query: args.query,
        limit: args.limit,
      });
      if (hits.length === 0) return { content: 'No matching passages found.' };
      return { content: JSON.stringify({ results: hits }) };
    },
  });
}

/**
 * Adds `search_knowledge_base` to runs whose request has a non-empty `knowledge_base_ids`; the
 * user id comes from the run (the verified token), never from the request.
 */
export function knowledgeToolSource(db: Queryable): ToolSource {
  return (run) => {
    const ids = run.request.knowledge_base_ids;
    return Promise.resolve(ids.length > 0 ? [searchKnowledgeBaseTool(db, run.userId, ids)] : []);
  };
}

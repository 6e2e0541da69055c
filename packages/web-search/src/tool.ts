import type { AgentTool } from '@agent-backend/agent-runtime';
import { WebSearchFailedError, type WebSearch } from './web-search.js';

export const WEB_SEARCH_TOOL = 'web_search';
const MAX_RESULTS = 10;
const DEFAULT_RESULTS = 5;

/** The `web_search` tool (a read): numbered results with title, URL, date and snippet. */
export function webSearchTool(search: WebSearch): AgentTool {
  return {
    name: WEB_SEARCH_TOOL,
    description:
      'Searches the web. Returns titles, URLs, dates where known and snippets; cite the URLs.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 400 },
        max_results: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_RESULTS,
          default: DEFAULT_RESULTS,
        },
        recency_days: {
          type: 'integer',
          minimum: 1,
          maximum: 3650,
          description: 'Only pages from the last this many days.',
        },
      },
      required: ['query'],
      additionalProperties: false,
    },
    writes: false,
    repeatSafe: true,
    async execute(args, context) {
      const query = typeof args.query === 'string' ? args.query.trim() : '';
      if (!query || query.length > 400) {
        return { content: 'query must be 1 to 400 characters', isError: true };
      }
      const max =
        typeof args.max_results === 'number'
          ? Math.min(MAX_RESULTS, Math.max(1, Math.floor(args.max_results)))
          : DEFAULT_RESULTS;
      const days =
        typeof args.recency_days === 'number' && args.recency_days >= 1
          ? Math.min(3650, Math.floor(args.recency_days))
          : undefined;
      try {
        const answer = await search.search(
          { query, maxResults: max, ...(days ? { recencyDays: days } : {}) },
          context.signal,
        );
        if (answer.results.length === 0) return { content: `No results for "${query}".` };
        return {
          content: answer.results
            .map(
              (r, i) =>
                `${i + 1}. ${r.title}\n   ${r.url}${r.date ? `\n   ${r.date}` : ''}` +
                (r.snippet ? `\n   ${r.snippet.replace(/\s+/g, ' ').slice(0, 500)}` : ''),
            )
            .join('\n'),
        };
      } catch (error) {
        if (error instanceof WebSearchFailedError) {
          return {
            content: `Web search is unavailable right now (${error.reasons.join('; ')}).`,
            isError: true,
          };
        }
        throw error;
      }
    },
  };
}

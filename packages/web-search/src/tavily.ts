import {
  providerFetch,
  type SearchProvider,
  type SearchQuery,
  type SearchResult,
} from './provider.js';

/** Tavily's `time_range` for a number of days: the smallest window that covers them. */
export function tavilyTimeRange(days: number): 'day' | 'week' | 'month' | 'year' {
  if (days <= 1) return 'day';
  if (days <= 7) return 'week';
  if (days <= 31) return 'month';
  return 'year';
}

interface TavilyResponse {
  results?: Array<{ title?: string; url?: string; content?: string; published_date?: string }>;
}

/** Tavily Search: `POST {base}/search`, the key as a bearer token. */
export function tavilyProvider(options: { apiKey: string; baseUrl: string }): SearchProvider {
  const endpoint = new URL('/search', options.baseUrl).href;
  return {
    name: 'tavily',
    async search(query: SearchQuery, signal: AbortSignal): Promise<SearchResult[]> {
      const body = (await providerFetch(
        'tavily',
        endpoint,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.apiKey}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({
            query: query.query,
            max_results: query.maxResults,
            search_depth: 'basic',
            topic: 'general',
            ...(query.recencyDays ? { time_range: tavilyTimeRange(query.recencyDays) } : {}),
          }),
        },
        signal,
      )) as TavilyResponse;
      return (body.results ?? [])
        .filter((r) => typeof r.url === 'string')
        .map((r) => ({
          title: r.title ?? r.url!,
          url: r.url!,
          snippet: r.content ?? '',
          ...(r.published_date ? { date: r.published_date } : {}),
        }));
    },
  };
}

import {
  providerFetch,
  type SearchProvider,
  type SearchQuery,
  type SearchResult,
} from './provider.js';

/** Brave's `freshness` for the last `days` days: a date range `YYYY-MM-DDtoYYYY-MM-DD`. */
export function braveFreshness(days: number, now = new Date()): string {
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return `${day(new Date(now.getTime() - days * 86_400_000))}to${day(now)}`;
}

interface BraveResponse {
  web?: {
    results?: Array<{
      title?: string;
      url?: string;
      description?: string;
      age?: string;
      page_age?: string;
    }>;
  };
}

/** Brave's snippets carry `<strong>` highlights; the model reads plain text. */
const stripTags = (text: string) => text.replace(/<\/?[a-z][^>]*>/gi, '');

/** Brave Search: `GET {base}/res/v1/web/search`, the key in `X-Subscription-Token`. */
export function braveProvider(options: { apiKey: string; baseUrl: string }): SearchProvider {
  return {
    name: 'brave',
    async search(query: SearchQuery, signal: AbortSignal): Promise<SearchResult[]> {
      const url = new URL('/res/v1/web/search', options.baseUrl);
      url.searchParams.set('q', query.query);
      url.searchParams.set('count', String(query.maxResults));
      if (query.recencyDays) url.searchParams.set('freshness', braveFreshness(query.recencyDays));
      const body = (await providerFetch(
        'brave',
        url.href,
        {
          headers: { accept: 'application/json', 'x-subscription-token': options.apiKey },
        },
        signal,
      )) as BraveResponse;
      return (body.web?.results ?? [])
        .filter((r) => typeof r.url === 'string')
        .map((r) => ({
          title: stripTags(r.title ?? r.url!),
          url: r.url!,
          snippet: stripTags(r.description ?? ''),
          ...((r.page_age ?? r.age) ? { date: (r.page_age ?? r.age)! } : {}),
        }));
    },
  };
}

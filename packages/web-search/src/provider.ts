/** One search result, as the tool shows it. */
export interface SearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
  /** Publication date or age as the provider gives it, when it does. */
  readonly date?: string;
}

/** What one search asks. */
export interface SearchQuery {
  readonly query: string;
  readonly maxResults: number;
  /** Only pages from the last this many days. */
  readonly recencyDays?: number;
}

/** A search provider with the operator's key. */
export interface SearchProvider {
  readonly name: string;
  search(query: SearchQuery, signal: AbortSignal): Promise<SearchResult[]>;
}

/**
 * A provider's failure. `failover`: the next provider should be tried (timeout, rate limit,
 * quota, server error, network); otherwise the request itself is wrong or the key is refused.
 */
export class SearchProviderError extends Error {
  constructor(
    readonly provider: string,
    message: string,
    readonly failover: boolean,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'SearchProviderError';
  }
}

/** HTTP statuses that move on to the next provider: rate limits, quotas, server errors. */
export function failsOver(status: number): boolean {
  // 402 (Brave: payment required); Tavily answers 432 / 433 for plan and pay-as-you-go limits.
  return status === 429 || status === 402 || status === 432 || status === 433 || status >= 500;
}

/**
 * `fetch` of a provider request, its failures as {@link SearchProviderError}: a timeout or a
 * network error fails over; an HTTP error fails over on {@link failsOver}. The message never
 * contains the request's headers (the key).
 */
export async function providerFetch(
  provider: string,
  url: string,
  init: RequestInit,
  signal: AbortSignal,
): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal, redirect: 'error' });
  } catch {
    const timedOut =
      signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError';
    throw new SearchProviderError(
      provider,
      timedOut ? `${provider} did not answer in time` : `${provider} could not be reached`,
      true,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new SearchProviderError(
      provider,
      `${provider} answered HTTP ${response.status}`,
      failsOver(response.status),
      response.status,
    );
  }
  try {
    return await response.json();
  } catch {
    throw new SearchProviderError(
      provider,
      `${provider} answered something that is not JSON`,
      true,
    );
  }
}

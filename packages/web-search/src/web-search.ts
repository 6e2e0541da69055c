import { createHash } from 'node:crypto';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { CircuitBreaker } from './breaker.js';
import {
  SearchProviderError,
  type SearchProvider,
  type SearchQuery,
  type SearchResult,
} from './provider.js';

export interface WebSearchSettings {
  /** Per provider call. */
  readonly timeoutMs: number;
  /** How long one query's results are reused; 0: not cached. */
  readonly cacheTtlMs: number;
  /** Consecutive failures that open a provider's breaker. */
  readonly breakerFailures: number;
  /** How long an open breaker skips its provider. */
  readonly breakerCooldownMs: number;
}

/** The answer of a search: its results and which provider gave them (or the cache). */
export interface WebSearchAnswer {
  readonly results: SearchResult[];
  readonly provider: string;
  readonly cached: boolean;
}

/** Every provider failed or was skipped; `reasons` says why, one per provider. */
export class WebSearchFailedError extends Error {
  constructor(readonly reasons: readonly string[]) {
    super(`web search failed: ${reasons.join('; ')}`);
    this.name = 'WebSearchFailedError';
  }
}

/** A URL as a duplicate check sees it: no fragment, no tracking parameters, no trailing slash. */
export function normalizeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.hash = '';
    for (const key of [...parsed.searchParams.keys()]) {
      if (/^utm_|^(fbclid|gclid|ref)$/i.test(key)) parsed.searchParams.delete(key);
    }
    const path = parsed.pathname.replace(/\/+$/, '');
    return `${parsed.protocol}//${parsed.host.toLowerCase().replace(/^www\./, '')}${path}${parsed.search}`;
  } catch {
    return url;
  }
}

/** The results without repeats of a page (first kept), at most `max`. */
export function dedupe(results: readonly SearchResult[], max: number): SearchResult[] {
  const seen = new Set<string>();
  const kept: SearchResult[] = [];
  for (const result of results) {
    const key = normalizeUrl(result.url);
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(result);
    if (kept.length === max) break;
  }
  return kept;
}

/**
 * Web search over the operator's providers, in order: a provider that times out,
 * rate-limits, runs out of quota or fails (5xx, network) passes the query to the next; an empty
 * result is an answer, not a failure, and a refused request (400, 401, 403) ends the search. A process-wide breaker per provider skips one that keeps
 * failing. Answers are cached briefly per query in the ephemeral store (shared by replicas on
 * Redis) and deduplicated by URL.
 */
export class WebSearch {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    readonly providers: readonly SearchProvider[],
    private readonly ephemeral: EphemeralStore,
    private readonly settings: WebSearchSettings,
  ) {
    for (const provider of providers) {
      this.breakers.set(
        provider.name,
        new CircuitBreaker(settings.breakerFailures, settings.breakerCooldownMs),
      );
    }
  }

  async search(query: SearchQuery, signal?: AbortSignal): Promise<WebSearchAnswer> {
    const key = `web-search:${createHash('sha256')
      .update(
        JSON.stringify([
          query.query.trim().toLowerCase(),
          query.maxResults,
          query.recencyDays ?? 0,
        ]),
      )
      .digest('hex')}`;
    const caching = this.settings.cacheTtlMs > 0;
    const cached = caching ? await this.ephemeral.get(key) : null;
    if (cached) {
      const hit = JSON.parse(cached) as { provider: string; results: SearchResult[] };
      return { ...hit, cached: true };
    }
    const reasons: string[] = [];
    for (const provider of this.providers) {
      const breaker = this.breakers.get(provider.name)!;
      if (!breaker.allow()) {
        reasons.push(`${provider.name} skipped after repeated failures`);
        continue;
      }
      const timeout = AbortSignal.timeout(this.settings.timeoutMs);
      try {
        const raw = await provider.search(
          query,
          signal ? AbortSignal.any([signal, timeout]) : timeout,
        );
        breaker.succeeded();
        const results = dedupe(raw, query.maxResults);
        if (caching) {
          await this.ephemeral.set(key, JSON.stringify({ provider: provider.name, results }), {
            ttlMs: this.settings.cacheTtlMs,
          });
        }
        return { results, provider: provider.name, cached: false };
      } catch (error) {
        signal?.throwIfAborted();
        if (!(error instanceof SearchProviderError)) throw error;
        reasons.push(error.message);
        if (!error.failover) {
          // The request or the key is wrong (400, 401, 403): the provider is up, and another
          // provider is not what the operator ordered for this case; the tool reports it.
          breaker.succeeded();
          throw new WebSearchFailedError(reasons);
        }
        breaker.failed();
      }
    }
    throw new WebSearchFailedError(reasons);
  }
}

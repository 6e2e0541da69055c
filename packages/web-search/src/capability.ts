import type { Capability } from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import { braveProvider } from './brave.js';
import type { SearchProvider } from './provider.js';
import { tavilyProvider } from './tavily.js';
import { webSearchTool } from './tool.js';
import { WebSearch } from './web-search.js';

export interface WebSearchDeps {
  /** The shared answer cache and breaker state. */
  readonly ephemeral: EphemeralStore;
}

/** The configuration keys the capability reads (a subset of the service config). */
export interface WebSearchConfig {
  readonly WEB_SEARCH_PROVIDERS: readonly string[];
  readonly TAVILY_API_KEY?: string | undefined;
  readonly TAVILY_API_BASE_URL: string;
  readonly BRAVE_SEARCH_API_KEY?: string | undefined;
  readonly BRAVE_SEARCH_API_BASE_URL: string;
  readonly WEB_SEARCH_TIMEOUT_MS: number;
  readonly WEB_SEARCH_CACHE_TTL_MS: number;
  readonly WEB_SEARCH_BREAKER_FAILURES: number;
  readonly WEB_SEARCH_BREAKER_COOLDOWN_MS: number;
}

/**
 * `web_search` for runs with `enable_web_search` (docs/web-search.md): the providers with a key,
 * in `WEB_SEARCH_PROVIDERS` order; without any, such a run gets a `web_search_unavailable`
 * notice instead.
 */
export function webSearchCapability(deps: WebSearchDeps, settings: WebSearchConfig): Capability {
  const providers: SearchProvider[] = settings.WEB_SEARCH_PROVIDERS.flatMap((name) => {
    if (name === 'tavily' && settings.TAVILY_API_KEY) {
      return [
        tavilyProvider({ apiKey: settings.TAVILY_API_KEY, baseUrl: settings.TAVILY_API_BASE_URL }),
      ];
    }
    if (name === 'brave' && settings.BRAVE_SEARCH_API_KEY) {
      return [
        braveProvider({
          apiKey: settings.BRAVE_SEARCH_API_KEY,
          baseUrl: settings.BRAVE_SEARCH_API_BASE_URL,
        }),
      ];
    }
    return [];
  });
  const webSearch = new WebSearch(providers, deps.ephemeral, {
    timeoutMs: settings.WEB_SEARCH_TIMEOUT_MS,
    cacheTtlMs: settings.WEB_SEARCH_CACHE_TTL_MS,
    breakerFailures: settings.WEB_SEARCH_BREAKER_FAILURES,
    breakerCooldownMs: settings.WEB_SEARCH_BREAKER_COOLDOWN_MS,
  });
  return {
    source: async (run) => {
      if (!run.request.capabilities.webSearch) return [];
      if (providers.length === 0) {
        return {
          events: [
            {
              type: 'notice',
              code: 'web_search_unavailable',
              message: 'Web search is not configured on this service, so the answer cannot use it.',
            },
          ],
        };
      }
      return [webSearchTool(webSearch)];
    },
  };
}

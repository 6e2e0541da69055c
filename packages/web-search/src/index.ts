export { CircuitBreaker } from './breaker.js';
export { braveFreshness, braveProvider } from './brave.js';
export {
  failsOver,
  SearchProviderError,
  type SearchProvider,
  type SearchQuery,
  type SearchResult,
} from './provider.js';
export { tavilyProvider, tavilyTimeRange } from './tavily.js';
export { WEB_SEARCH_TOOL, webSearchTool } from './tool.js';
export {
  dedupe,
  normalizeUrl,
  WebSearch,
  WebSearchFailedError,
  type WebSearchAnswer,
  type WebSearchSettings,
} from './web-search.js';
export { webSearchCapability, type WebSearchConfig, type WebSearchDeps } from './capability.js';

export {
  EXPIRY_MARGIN_MS,
  expiryMs,
  SaasAccount,
  type AccountSettings,
  type PagedAnswer,
  type ProviderEndpoints,
  type SaasRequest,
} from './account.js';
export {
  cut,
  DEFAULT_RATE_LIMIT_WAIT_MS,
  rateLimit,
  retryAfterMs,
  SaasError,
  segment,
} from './saas-http.js';
export { refreshOnce, RefreshFailedError, type RefreshedTokens } from './refresh.js';
export { saasToolSource, type SaasEndpoints } from './source.js';
export { saasToolsCapability, type SaasToolsConfig, type SaasToolsDeps } from './capability.js';

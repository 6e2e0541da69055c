export {
  cut,
  expiryMs,
  retryAfterMs,
  SaasAccount,
  SaasError,
  type AccountSettings,
  type ProviderEndpoints,
  type SaasRequest,
} from './account.js';
export { refreshOnce, RefreshFailedError, type RefreshedTokens } from './refresh.js';
export { saasToolSource, type SaasEndpoints } from './source.js';

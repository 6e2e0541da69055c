export {
  classifyAddress,
  embeddedIPv4,
  PRIVATE_CATEGORIES,
  type AddressCategory,
} from './address-ranges.js';
export { UrlRefusedError, isUrlRefusedError, type RefusalReason } from './errors.js';
export { createUrlGuard, type UrlGuard, type UrlGuardOptions, type Resolve } from './url-guard.js';
export { GuardedFetch, type FetchLike, type GuardedFetchOptions } from './guarded-fetch.js';

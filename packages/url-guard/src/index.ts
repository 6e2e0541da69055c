export {
  classifyAddress,
  embeddedIPv4,
  PRIVATE_CATEGORIES,
  type AddressCategory,
} from './address-ranges.js';
export {
  UrlRefusedError,
  isUrlRefusedError,
  RedirectRefusedError,
  type RefusalReason,
} from './errors.js';
export {
  createUrlGuard,
  parseOrigin,
  type ConnectionChecks,
  type UrlGuard,
  type UrlGuardOptions,
  type Resolve,
} from './url-guard.js';
export { classifyOutboundFailure, errorChain, type OutboundFailure } from './network-failure.js';
export { FORBIDDEN_REQUEST_HEADERS } from './forbidden-headers.js';
export { GuardedFetch, type FetchLike, type GuardedFetchOptions } from './guarded-fetch.js';

export { decryptEvent, encryptEvent, eventSignature, safeEqual } from './event-crypto.js';
export {
  verifyEvent,
  type EventVerification,
  type SignatureHeaders,
  type VerifiedEvent,
} from './verify-event.js';
export {
  LarkClient,
  LarkApiError,
  LARK_ORIGINS,
  type LarkClientOptions,
  type LarkPlatform,
} from './lark-client.js';

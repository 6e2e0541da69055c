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
  RECEIVE_ID_TYPES,
  type LarkClientOptions,
  type LarkPlatform,
  type ReceiveIdType,
} from './lark-client.js';

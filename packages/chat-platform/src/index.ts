export {
  handleWebhook,
  ACK,
  EVENT_DEDUP_TTL_MS,
  type WebhookDeps,
  type WebhookAnswer,
} from './webhook.js';
export {
  CHAT_MESSAGE_QUEUE,
  chatSessionOwner,
  processChatMessage,
  type ChatReplyDeps,
} from './process-message.js';
export { larkClients, larkNotifier, type LarkAppConfig } from './lark-clients.js';

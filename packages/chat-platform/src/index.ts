export {
  handleWebhook,
  ACK,
  EVENT_DEDUP_TTL_MS,
  type WebhookDeps,
  type WebhookAnswer,
} from './webhook.js';
export { processChatMessage, chatSessionOwner, type ChatReplyDeps } from './process-message.js';
export { larkClients, larkNotifier, type LarkAppConfig } from './lark-clients.js';

export { handleWebhook, ACK, type WebhookDeps, type WebhookAnswer } from './webhook.js';
export {
  CHAT_MESSAGE_QUEUE,
  ChatInbox,
  acceptChatMessage,
  chatMessageJobId,
  requeueUnanswered,
  INBOX_REQUEUE_WINDOW_MS,
  INBOX_RETENTION_MS,
  type InboxCursor,
} from './inbox.js';
export {
  chatSessionOwner,
  processChatMessage,
  RATE_LIMITED_NOTICE,
  type ChatReplyDeps,
} from './process-message.js';
export { larkClients, larkNotifier, type LarkAppConfig } from './lark-clients.js';

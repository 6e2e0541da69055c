/** Delivery of scheduled-task confirmations and results: in-app, email (SMTP), chat platform. */
export {
  CHAT_PLATFORM_KEYS,
  resolveChannels,
  type Channel,
  type ChatPlatformNotifier,
  type EmailSender,
} from './channels.js';
export { createSmtpEmailSender, type SmtpEmailOptions } from './smtp-email.js';
export {
  createNotifier,
  type DeliveryReport,
  type Notification,
  type Notifier,
  type NotifierOptions,
} from './notifier.js';

import type { NotificationConfig, ServerMessage } from '@agent-backend/protocol';
import { resolveChannels, type ChatPlatformNotifier, type EmailSender } from './channels.js';

/** What to tell the user, in a form for each channel. */
export interface Notification {
  userId: string;
  /** Email subject; first line of chat messages. */
  subject: string;
  text: string;
  /** The message for the user's web clients. */
  inApp: ServerMessage;
}

export interface NotifierOptions {
  /** Publishes to the user's web clients (through the gateway). */
  publishInApp(userId: string, message: ServerMessage): Promise<unknown>;
  email?: EmailSender;
  chat?: ChatPlatformNotifier;
  /** Reports a skipped or failed channel; never receives secrets. */
  onSkip?(info: { userId: string; channel: string; reason: string }): void;
}

/** Delivery outcome per channel. */
export type DeliveryReport = Array<{ channel: string; ok: boolean; reason?: string }>;

/**
 * Delivers one notification to every channel of a task's `notification_config`. A channel
 * that fails or is not configured is reported and skipped; it never stops the others.
 */
export function createNotifier(options: NotifierOptions) {
  return {
    async notify(
      config: NotificationConfig | undefined,
      notification: Notification,
    ): Promise<DeliveryReport> {
      const { channels, skipped } = resolveChannels(config);
      const report: DeliveryReport = skipped.map((s) => ({ ...s, ok: false }));
      await Promise.all(
        channels.map(async (channel) => {
          const name = channel.kind === 'chat' ? channel.platform : channel.kind;
          try {
            if (channel.kind === 'inApp') {
              await options.publishInApp(notification.userId, notification.inApp);
            } else if (channel.kind === 'email') {
              if (!options.email) throw new Error('SMTP_URL is not configured');
              await options.email.send({
                to: channel.to,
                subject: notification.subject,
                text: notification.text,
              });
            } else {
              if (!options.chat) throw new Error('no chat-platform client is configured');
              await options.chat.send({
                userId: notification.userId,
                text: `${notification.subject}\n\n${notification.text}`,
                target: channel.target,
              });
            }
            report.push({ channel: name, ok: true });
          } catch (error) {
            report.push({ channel: name, ok: false, reason: (error as Error).message });
          }
        }),
      );
      for (const r of report)
        if (!r.ok)
          options.onSkip?.({ userId: notification.userId, channel: r.channel, reason: r.reason! });
      return report;
    },
  };
}
export type Notifier = ReturnType<typeof createNotifier>;

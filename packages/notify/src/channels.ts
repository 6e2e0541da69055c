import type { NotificationConfig } from '@agent-backend/protocol';

/**
 * Sends a text to a user on the chat platform. Implemented by the chat-platform client
 * (`packages/lark`); absent: chat notifications are logged and skipped.
 */
export interface ChatPlatformNotifier {
  send(input: { userId: string; text: string; target: unknown }): Promise<void>;
}

/** Sends one email. */
export interface EmailSender {
  send(input: { to: string; subject: string; text: string }): Promise<void>;
}

/** Chat-platform keys of `notification_config` (the spec's `<chat_platform>`). */
export const CHAT_PLATFORM_KEYS = ['lark', 'feishu'] as const;

/** Where one delivery goes, resolved from a task's `notification_config`. */
export type Channel =
  | { kind: 'inApp' }
  | { kind: 'email'; to: string }
  | { kind: 'chat'; platform: string; target: Record<string, unknown> };

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * The channels a config asks for. `inApp` is on unless it is `false` (the user must be able to
 * confirm). `email` needs an address: `{ "to": "a@b.c" }` (the service has no user directory, so
 * `true` alone cannot be delivered and is reported as skipped). A chat platform needs an object
 * with the receiver: `{ "chat_id": "oc_..." }`, `{ "open_id": "ou_..." }`, `{ "user_id": ... }`
 * or `{ "email": ... }` (the platform's `receive_id_type`s).
 */
export function resolveChannels(config: NotificationConfig | undefined): {
  channels: Channel[];
  skipped: Array<{ channel: string; reason: string }>;
} {
  const channels: Channel[] = [];
  const skipped: Array<{ channel: string; reason: string }> = [];
  if (config?.inApp !== false) channels.push({ kind: 'inApp' });
  const email = config?.email;
  if (email !== undefined && email !== false) {
    const to = typeof email === 'object' ? (email.to ?? email.address) : undefined;
    if (typeof to === 'string' && EMAIL.test(to)) channels.push({ kind: 'email', to });
    else skipped.push({ channel: 'email', reason: 'no address: use { "to": "user@example.com" }' });
  }
  for (const platform of CHAT_PLATFORM_KEYS) {
    const value = config?.[platform];
    if (value === undefined || value === false) continue;
    const target = typeof value === 'object' ? (value as Record<string, unknown>) : {};
    const receiver = ['chat_id', 'open_id', 'user_id', 'union_id', 'email'].some(
      (k) => typeof target[k] === 'string' && target[k] !== '',
    );
    if (receiver) channels.push({ kind: 'chat', platform, target: { ...target, platform } });
    else skipped.push({ channel: platform, reason: 'no receiver: use { "chat_id": "..." }' });
  }
  return { channels, skipped };
}

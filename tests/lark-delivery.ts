/**
 * Chat-platform (Lark/Feishu) deliveries as the platform sends them: an `im.message.receive_v1`
 * event, encrypted with the app's encrypt key and signed over timestamp, nonce and body.
 */
import { encryptEvent, eventSignature } from '@agent-backend/lark';

export interface LarkApp {
  readonly appId: string;
  readonly encryptKey: string;
  /** The verification token carried in each event's header. */
  readonly token: string;
}

/** A schema 2.0 `im.message.receive_v1` event with a text message. */
export function larkMessageEvent(
  app: LarkApp,
  message: { eventId: string; chatId: string; text: string; openId?: string },
) {
  return {
    schema: '2.0',
    header: {
      event_id: message.eventId,
      event_type: 'im.message.receive_v1',
      token: app.token,
      create_time: String(Date.now()),
      app_id: app.appId,
    },
    event: {
      sender: { sender_id: { open_id: message.openId ?? 'ou_user1' }, sender_type: 'user' },
      message: {
        message_id: `om_${message.eventId}`,
        chat_id: message.chatId,
        chat_type: 'p2p',
        message_type: 'text',
        content: JSON.stringify({ text: message.text }),
      },
    },
  };
}

/** Encrypts and signs an event as the platform does; returns what goes on the wire. */
export function larkWebhookRequest(
  app: Pick<LarkApp, 'encryptKey'>,
  event: unknown,
  options: { timestamp?: number; nonce?: string; signature?: string } = {},
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ encrypt: encryptEvent(app.encryptKey, JSON.stringify(event)) });
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const nonce = options.nonce ?? 'nonce-1';
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-lark-request-timestamp': timestamp,
      'x-lark-request-nonce': nonce,
      'x-lark-signature':
        options.signature ?? eventSignature(timestamp, nonce, app.encryptKey, body),
    },
  };
}

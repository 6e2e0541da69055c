import { z } from 'zod';
import { JobTraceContext } from './job-trace.js';

/*
 * Bodies of the chat-platform event callback, `POST /channels/<platform>/webhook` (spec 4.5, 6.3).
 * The platform is Lark/Feishu; its event format is schema 2.0.
 */

/** The platform checks the callback URL; answered with {@link UrlVerificationResponse}. */
export const UrlVerificationBody = z.object({
  type: z.literal('url_verification'),
  challenge: z.string(),
  /** The app's verification token; checked when one is configured. */
  token: z.string().optional(),
});
export type UrlVerificationBody = z.infer<typeof UrlVerificationBody>;

/** Echoes the challenge. */
export const UrlVerificationResponse = z.object({
  challenge: z.string(),
});
export type UrlVerificationResponse = z.infer<typeof UrlVerificationResponse>;

/**
 * A body encrypted with the app's encrypt key. Once decrypted it is one of the other bodies of
 * this file.
 */
export const EncryptedBody = z.object({
  encrypt: z.string().min(1),
});
export type EncryptedBody = z.infer<typeof EncryptedBody>;

/** The header every schema 2.0 event carries. `create_time` is epoch milliseconds as a string. */
const EventHeader = z.object({
  event_id: z.string().min(1),
  event_type: z.string().min(1),
  create_time: z.string().optional(),
  token: z.string().optional(),
  app_id: z.string().optional(),
  tenant_key: z.string().optional(),
});

/**
 * Any schema 2.0 event, before its type is known. The service acknowledges event types it does
 * not handle instead of failing them, since the platform retries failures for hours.
 */
export const EventCallbackEnvelope = z.object({
  schema: z.literal('2.0'),
  header: EventHeader,
  event: z.unknown(),
});
export type EventCallbackEnvelope = z.infer<typeof EventCallbackEnvelope>;

/** A user sent a message to the bot (`im.message.receive_v1`). */
export const MessageReceiveEvent = z.object({
  schema: z.literal('2.0'),
  header: EventHeader.extend({ event_type: z.literal('im.message.receive_v1') }),
  event: z.object({
    message: z.object({
      message_id: z.string().min(1),
      chat_id: z.string().min(1),
      /** `p2p` or `group` on the platform; kept as text. */
      chat_type: z.string().optional(),
      message_type: z.string(),
      /** A JSON document as a string; for text messages `{"text": "..."}`. See {@link parseMessageText}. */
      content: z.string(),
    }),
    sender: z.object({
      sender_id: z.object({
        open_id: z.string().optional(),
        user_id: z.string().optional(),
        union_id: z.string().optional(),
      }),
      sender_type: z.string().optional(),
    }),
  }),
});
export type MessageReceiveEvent = z.infer<typeof MessageReceiveEvent>;

/** Quick acknowledgement of an event; the work happens in the background (spec 4.5). */
export const WebhookAck = z.object({
  code: z.literal(0),
  msg: z.literal('success'),
});
export type WebhookAck = z.infer<typeof WebhookAck>;

/**
 * A refused event (not JSON, not decryptable, a wrong signature or verification token, not a
 * schema 2.0 event, or not queued): `code` repeats the HTTP status (400, 401 or 503).
 */
export const WebhookRefusal = z.object({
  code: z.number().int(),
  msg: z.string(),
});
export type WebhookRefusal = z.infer<typeof WebhookRefusal>;

/**
 * The text of a message's `content` string, or null when it is not JSON or has no string `text`
 * (images, files, stickers): those are not questions the agent can answer.
 */
export function parseMessageText(content: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || !('text' in parsed)) return null;
  return typeof parsed.text === 'string' ? parsed.text : null;
}

/** The chat platforms the webhook serves: the same protocol on two API domains. */
export const ChatPlatform = z.enum(['feishu', 'lark']);
export type ChatPlatform = z.infer<typeof ChatPlatform>;

/**
 * The job queued for one received text message (validated again by the worker). `event_id` is
 * the job id, so a platform retry that slipped past deduplication cannot queue it twice.
 */
export const ChatMessageJob = z.object({
  platform: ChatPlatform,
  event_id: z.string().min(1),
  message_id: z.string().min(1),
  chat_id: z.string().min(1),
  chat_type: z.string().optional(),
  sender_open_id: z.string().optional(),
  text: z.string().min(1),
  /** The trace context of the webhook request that queued it (docs/operations.md, "Traces"). */
  trace: JobTraceContext.optional(),
});
export type ChatMessageJob = z.infer<typeof ChatMessageJob>;

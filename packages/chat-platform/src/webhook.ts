import { verifyEvent, type SignatureHeaders } from '@agent-backend/lark';
import { jobTraceContext } from '@agent-backend/jobs';
import type { Logger } from '@agent-backend/logger';
import {
  EventCallbackEnvelope,
  MessageReceiveEvent,
  parseMessageText,
  UrlVerificationBody,
  type ChatMessageJob,
  type ChatPlatform,
  type WebhookAck,
} from '@agent-backend/protocol';

export const ACK: WebhookAck = { code: 0, msg: 'success' };

export interface WebhookDeps {
  logger: Logger;
  encryptKey?: string;
  verificationToken?: string;
  /** Queues a message for the worker; the job id is the event id. */
  enqueue(job: ChatMessageJob): Promise<void>;
  /**
   * How long accepting a message (`enqueue`) may take before the webhook
   * answers 503, so the platform retries instead of waiting out its deadline while Redis or
   * PostgreSQL reconnects. What is still running finishes in the background (idempotent: the job
   * id is the event id). @default 5000
   */
  acceptTimeoutMs?: number;
}

export interface WebhookAnswer {
  status: number;
  body: unknown;
}

/**
 * One webhook request (spec 4.5), answered fast: verification (docs/chat-platform.md), then
 * `url_verification` → `{ challenge }`; `im.message.receive_v1` → queued under its event id as
 * the job id (so a duplicate, from a retry or another replica, makes no second job),
 * `{ code: 0, msg: 'success' }`; any other event type → acknowledged and ignored, so the platform
 * does not retry it for hours. Refusals are `{ code: <status>, msg }`.
 */
export async function handleWebhook(
  platform: ChatPlatform,
  rawBody: string,
  headers: SignatureHeaders,
  deps: WebhookDeps,
): Promise<WebhookAnswer> {
  const verified = verifyEvent(rawBody, headers, {
    encryptKey: deps.encryptKey,
    verificationToken: deps.verificationToken,
  });
  if (!verified.ok) {
    deps.logger.warn({ platform, reason: verified.reason }, 'chat-platform event refused');
    return { status: verified.status, body: { code: verified.status, msg: verified.reason } };
  }
  const body = verified.body;

  if (body.type === 'url_verification') {
    const challenge = UrlVerificationBody.safeParse(body);
    if (!challenge.success) return refuse(400, 'url_verification without a challenge');
    return { status: 200, body: { challenge: challenge.data.challenge } };
  }

  const envelope = EventCallbackEnvelope.safeParse(body);
  if (!envelope.success) return refuse(400, 'not a schema 2.0 event');
  const { event_id: eventId, event_type: eventType } = envelope.data.header;
  if (eventType !== 'im.message.receive_v1') {
    deps.logger.info(
      { platform, eventId, eventType },
      'chat-platform event type not handled; acknowledged',
    );
    return { status: 200, body: ACK };
  }
  const event = MessageReceiveEvent.safeParse(body);
  if (!event.success) return refuse(400, 'invalid im.message.receive_v1 event');

  const { message, sender } = event.data.event;
  const text = parseMessageText(message.content)?.trim();
  if (!text) {
    deps.logger.info(
      { platform, eventId, type: message.message_type },
      'message without text; nothing to answer',
    );
    return { status: 200, body: ACK };
  }
  // A duplicate (a retry, or the same event on another replica) is handed to the queue like the
  // first delivery: the job id is the event id, and the queue keeps one job per id for a day
  // (the platform retries for about 7 hours), so no second job results. Nothing is remembered
  // beside the queue: a separate "seen" record, written first, lost every message whose record
  // landed but whose job did not (tests/faults/redis-restart.test.ts, long profile).
  const job: ChatMessageJob = {
    platform,
    event_id: eventId,
    message_id: message.message_id,
    chat_id: message.chat_id,
    chat_type: message.chat_type,
    sender_open_id: sender.sender_id.open_id,
    text,
  };
  const trace = jobTraceContext();
  if (trace) job.trace = trace;
  try {
    // A deadline of its own: the queue's connection may be reconnecting (Redis restarting), and
    // the platform waits for an answer only so long (tests/faults/redis-restart.test.ts).
    await withinDeadline(deps.enqueue(job), deps.acceptTimeoutMs ?? 5_000);
  } catch (error) {
    // Not queued: the platform retries, and its retry is queued.
    deps.logger.error({ err: error, platform, eventId }, 'could not queue chat-platform message');
    return refuse(503, 'temporarily unable to accept events');
  }
  return { status: 200, body: ACK };

  function refuse(status: number, msg: string): WebhookAnswer {
    deps.logger.warn({ platform, reason: msg }, 'chat-platform event refused');
    return { status, body: { code: status, msg } };
  }
}

/** `work`, or a rejection once `ms` passed (`work` goes on; its late failure is ignored). */
function withinDeadline(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not accepted within ${ms} ms`)), ms);
  });
  work.catch(() => {});
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

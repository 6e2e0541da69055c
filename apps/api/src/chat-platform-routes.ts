import { handleWebhook } from '@agent-backend/chat-platform';
import type { SignatureHeaders } from '@agent-backend/lark';
import {
  ChatPlatform,
  EncryptedBody,
  EventCallbackEnvelope,
  MessageReceiveEvent,
  UrlVerificationBody,
  UrlVerificationResponse,
  WebhookAck,
  WebhookRefusal,
  type ChatMessageJob,
} from '@agent-backend/protocol';
import { AppError, assertText } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `POST /channels/:platform/webhook` (spec 4.5) for `feishu` and `lark`. No authentication
 * header (the platform's servers call it); the event itself is verified (signature over the raw
 * body, verification token). The raw body is kept as received (`rawBody`), so this route's JSON
 * is parsed by the webhook handler itself; every other route gets it parsed.
 */
export function registerChatPlatformRoutes(
  context: ServiceContext,
  enqueue: (job: ChatMessageJob) => Promise<void>,
): void {
  const { app, config, logger } = context;
  app.post(
    '/channels/:platform/webhook',
    {
      // The body as received: the signature is over these bytes.
      rawBody: true,
      // Per client address (`TRUST_PROXY`), before the body is read: a flood costs no parsing.
      limit: context.limits.rate('webhook'),
      doc: {
        tag: 'chat platform',
        summary: 'Receive a Lark/Feishu event',
        description:
          'Called by the platform. `url_verification` is answered with its challenge; ' +
          '`im.message.receive_v1` is deduplicated by event id, queued and acknowledged at once ' +
          '(a duplicate gets the same answer); other event types are acknowledged and ignored. ' +
          'With `LARK_ENCRYPT_KEY` set, bodies are `{ encrypt }` and every event but ' +
          '`url_verification` must carry a valid `X-Lark-Signature`; with ' +
          '`LARK_VERIFICATION_TOKEN` set, the token in the body must match. At most ' +
          '`RATE_LIMIT_WEBHOOK_PER_MINUTE` requests a minute per client address (429 ' +
          '`rate_limited` over it, which the platform retries).',
        auth: 'webhook',
        parameters: [
          {
            in: 'path',
            name: 'platform',
            description: 'The platform domain.',
            schema: ChatPlatform,
          },
          {
            in: 'header',
            name: 'X-Lark-Signature',
            description:
              'sha256 of timestamp + nonce + encrypt key + raw body (required with an encrypt key).',
          },
          {
            in: 'header',
            name: 'X-Lark-Request-Timestamp',
            description: 'Seconds since the epoch.',
          },
          { in: 'header', name: 'X-Lark-Request-Nonce', description: 'The request nonce.' },
        ],
        rawBody: [UrlVerificationBody, EncryptedBody, MessageReceiveEvent, EventCallbackEnvelope],
        responses: {
          200: {
            description:
              'The challenge of a `url_verification`, or the acknowledgement of an event.',
            json: [UrlVerificationResponse, WebhookAck],
          },
          400: {
            description: 'Not JSON, not decryptable, or not a valid event.',
            json: WebhookRefusal,
          },
          401: { description: 'Wrong signature or verification token.', json: WebhookRefusal },
          503: {
            description: 'The event could not be queued; the platform retries.',
            json: WebhookRefusal,
          },
        },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      // The text rules of every other route, on the parsed event (the body stays raw for the
      // signature check): a NUL or an unpaired surrogate would fail in the agent's store.
      assertText(parseOrUndefined(String(request.body ?? '')), 'body');
      const platform = ChatPlatform.safeParse(request.params.platform);
      if (!platform.success)
        throw new AppError('not_found', `unknown chat platform "${request.params.platform}"`);
      const answer = await handleWebhook(
        platform.data,
        String(request.body ?? ''),
        request.headers as SignatureHeaders,
        {
          logger,
          encryptKey: config.LARK_ENCRYPT_KEY,
          verificationToken: config.LARK_VERIFICATION_TOKEN,
          enqueue,
          acceptTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
        },
      );
      return reply.status(answer.status).send(answer.body);
    },
  );
}

/** The JSON value of `text`, or undefined when it is not JSON (the webhook handler says so). */
function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

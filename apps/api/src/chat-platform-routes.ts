import { handleWebhook } from '@agent-backend/chat-platform';
import type { SignatureHeaders } from '@agent-backend/lark';
import { ChatPlatform, type ChatMessageJob } from '@agent-backend/protocol';
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
    // The body as received: the signature is over these bytes.
    { rawBody: true },
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

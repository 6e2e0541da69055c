import { handleWebhook } from '@agent-backend/chat-platform';
import type { SignatureHeaders } from '@agent-backend/lark';
import { ChatPlatform, type ChatMessageJob } from '@agent-backend/protocol';
import { AppError } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `POST /channels/:platform/webhook` (spec 4.5) for `feishu` and `lark`. No authentication
 * header (the platform's servers call it); the event itself is verified (signature over the raw
 * body, verification token). The raw body is kept as received, so this route gets its own JSON
 * parser in an encapsulated scope; every other route keeps the default one.
 */
export function registerChatPlatformRoutes(
  context: ServiceContext,
  enqueue: (job: ChatMessageJob) => Promise<void>,
): void {
  const { app, engines, config, logger } = context;
  void app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    scope.post<{ Params: { platform: string } }>(
      '/channels/:platform/webhook',
      async (request, reply) => {
        const platform = ChatPlatform.safeParse(request.params.platform);
        if (!platform.success)
          throw new AppError('not_found', `unknown chat platform "${request.params.platform}"`);
        const answer = await handleWebhook(
          platform.data,
          String(request.body ?? ''),
          request.headers as SignatureHeaders,
          {
            ephemeral: engines.ephemeral,
            logger,
            encryptKey: config.LARK_ENCRYPT_KEY,
            verificationToken: config.LARK_VERIFICATION_TOKEN,
            enqueue,
          },
        );
        return reply.code(answer.status).send(answer.body);
      },
    );
  });
}

import type { AgentRunner } from '@agent-backend/agent-runtime';
import { CHAT_MESSAGE_QUEUE, larkClients, processChatMessage } from '@agent-backend/chat-platform';
import { ChatMessageJob } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * Processes queued chat-platform messages: the agent answers with the default model, the answer
 * goes back to the chat (docs/chat-platform.md). A job whose data does not parse is failed, not
 * retried: retrying cannot fix it.
 */
export async function processChatMessages(
  context: ServiceContext,
  runner: AgentRunner,
): Promise<void> {
  const { config, engines, logger } = context;
  const clients = larkClients(config);
  const llm =
    config.DEFAULT_LLM_BASE_URL && config.DEFAULT_LLM_MODEL
      ? {
          baseUrl: config.DEFAULT_LLM_BASE_URL,
          apiKey: config.DEFAULT_LLM_API_KEY ?? '',
          name: config.DEFAULT_LLM_MODEL,
          temperature: 0.7,
          chosenBy: 'operator' as const,
        }
      : undefined;
  await engines.jobs.process(
    CHAT_MESSAGE_QUEUE,
    async (data, job) => {
      const parsed = ChatMessageJob.safeParse(data);
      if (!parsed.success) {
        logger.error({ jobId: job.jobId }, 'invalid chat message job dropped');
        return;
      }
      await processChatMessage(
        parsed.data,
        { runner, ephemeral: engines.ephemeral, logger, llm, clients },
        job.signal,
      );
    },
    { concurrency: 4 },
  );
}

import type { AgentRunner } from '@agent-backend/agent-runtime';
import {
  CHAT_MESSAGE_QUEUE,
  ChatInbox,
  larkClients,
  processChatMessage,
  requeueUnanswered,
  type InboxCursor,
} from '@agent-backend/chat-platform';
import { inJobSpan } from '@agent-backend/jobs';
import { ChatMessageJob } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';
import { defaultRunModel } from './default-model.js';
import { startPeriodic } from './periodic.js';

/** How often a worker looks for acknowledged messages the queue lost. */
export const CHAT_INBOX_WATCH_INTERVAL_MS = 5_000;
/**
 * How old an unanswered message must be before it is queued again: younger ones are almost
 * always still waiting or running, and queuing them again would only cost a Redis round trip.
 */
export const CHAT_INBOX_REQUEUE_AFTER_MS = 10_000;
/** At most this many messages queued again per check. */
const REQUEUE_BATCH = 100;
/** Old rows are pruned once per this many checks (about an hour). */
const PRUNE_EVERY = 720;

/**
 * Processes queued chat-platform messages: the agent answers with the default model, the answer
 * goes back to the chat (docs/chat-platform.md). A job whose data does not parse is dropped, not
 * retried: retrying cannot fix it.
 *
 * Every few seconds the worker also queues again the acknowledged messages that are still
 * unanswered in the inbox (packages/chat-platform/src/inbox.ts): the queue ignores the ones it
 * still holds, and answers the ones a Redis that restarted empty lost. Returns the stop function
 * of that check.
 */
export async function processChatMessages(
  context: ServiceContext,
  runner: AgentRunner,
): Promise<() => Promise<void>> {
  const { config, engines, logger } = context;
  const inbox = new ChatInbox(engines.db);
  const clients = larkClients(config);
  const llm = defaultRunModel(config);
  // The platform's rate first: a chat refused by it spends no point of its own.
  const admit = async (message: ChatMessageJob) =>
    (await context.limits.allows('platform_messages', message.platform)) &&
    (await context.limits.allows('chat_messages', `${message.platform}:${message.chat_id}`));
  await engines.jobs.process(
    CHAT_MESSAGE_QUEUE,
    async (data, job) => {
      const parsed = ChatMessageJob.safeParse(data);
      if (!parsed.success) {
        logger.error({ jobId: job.jobId }, 'invalid chat message job dropped');
        return;
      }
      // The trace of the webhook request that queued the message continues here.
      await inJobSpan(
        'chat-message',
        parsed.data.trace,
        { 'agent_backend.chat.platform': parsed.data.platform },
        () =>
          processChatMessage(
            parsed.data,
            { runner, inbox, logger, llm, clients, admit },
            job.signal,
          ),
      );
    },
    { concurrency: 4 },
  );
  let checks = 0;
  // Each check goes on where the previous one stopped, so older messages the queue still holds
  // (or failed for good) do not hide younger ones it lost.
  let after: InboxCursor | undefined;
  return startPeriodic(
    CHAT_INBOX_WATCH_INTERVAL_MS,
    async () => {
      const { requeued, next } = await requeueUnanswered(engines, {
        minAgeMs: CHAT_INBOX_REQUEUE_AFTER_MS,
        limit: REQUEUE_BATCH,
        ...(after ? { after } : {}),
      });
      after = next;
      if (requeued > 0) logger.debug({ requeued }, 'unanswered chat messages handed to the queue');
      if (++checks % PRUNE_EVERY === 1) await inbox.prune();
    },
    (error) => logger.warn({ err: error }, 'chat inbox check failed'),
  );
}

import { createHash } from 'node:crypto';
import {
  chatSessionId,
  DEFAULT_LEASE_TTL_MS,
  runRequest,
  runToText,
  SessionBusyError,
  type AgentRunner,
  type PreparedRun,
  type RunModel,
  type RunRequest,
} from '@agent-backend/agent-runtime';
import type { LarkClient } from '@agent-backend/lark';
import type { Logger } from '@agent-backend/logger';
import type { ChatMessageJob } from '@agent-backend/protocol';
import type { ChatInbox } from './inbox.js';

export interface ChatReplyDeps {
  runner: AgentRunner;
  /** Where answered messages are marked (durable: a retry after Redis lost its data still sees it). */
  inbox: ChatInbox;
  logger: Logger;
  /** The model for chat messages (`DEFAULT_LLM_*`); absent: nothing can answer. */
  llm?: RunModel;
  /** Per platform; absent (no `LARK_APP_ID`/`LARK_APP_SECRET`): replies are logged, not sent. */
  clients: Partial<Record<ChatMessageJob['platform'], LarkClient>>;
  /**
   * Whether this message may start a run (the chat's and the platform's message rates,
   * docs/limits.md); false: it is answered with {@link RATE_LIMITED_NOTICE}. Absent: always.
   */
  admit?: (job: ChatMessageJob) => Promise<boolean>;
}

/** The reply to a chat message over its chat's or platform's message rate: no run, no model. */
export const RATE_LIMITED_NOTICE =
  'Too many messages at once; please wait a minute before sending more.';

/**
 * The worker's side of one chat message: run the agent on the text in the chat's conversation
 * (one persisted session per chat) with the default model, then reply in the chat.
 *
 * Delivery is at least once (a worker that dies mid-job gets the job retried). A reply is
 * marked in the inbox (the store) once sent, and a retry that finds it does nothing; a retry after
 * the agent ran but before the reply was marked runs the agent again (the answer is not kept),
 * so the conversation may hold that turn twice, but the chat gets one reply: every attempt sends
 * it with the same {@link replyUuid}, which the platform sends once.
 */
export async function processChatMessage(
  job: ChatMessageJob,
  deps: ChatReplyDeps,
  signal: AbortSignal,
): Promise<void> {
  if (await deps.inbox.isReplied(job)) return;
  const log = deps.logger.child({
    platform: job.platform,
    eventId: job.event_id,
    chat: job.chat_id,
  });

  let answer: string;
  if (!deps.llm) {
    answer = 'This assistant has no model configured yet.';
    log.warn('DEFAULT_LLM_* is not configured; answering with a notice');
  } else if (deps.admit && !(await deps.admit(job))) {
    answer = RATE_LIMITED_NOTICE;
    log.info('over the chat message rate; answering with a notice instead of a run');
  } else {
    answer = await runAgent(job, deps, deps.llm, signal);
  }

  const client = deps.clients[job.platform];
  if (!client) {
    log.info(
      { chars: answer.length },
      'reply not sent: LARK_APP_ID / LARK_APP_SECRET not configured',
    );
  } else {
    await client.replyText(job.message_id, answer, { uuid: replyUuid(job) });
    log.info({ chars: answer.length }, 'replied in chat');
  }
  await deps.inbox.markReplied(job);
}

/**
 * The platform's dedup key of the reply to `job`: the same for every attempt at that message, so
 * a reply sent by an attempt that died before marking it in the inbox is not sent again by the
 * next (the platform keeps the key an hour). 32 hex characters (its limit is 50).
 */
export function replyUuid(job: Pick<ChatMessageJob, 'platform' | 'message_id'>): string {
  return createHash('sha256')
    .update(`reply\n${job.platform}\n${job.message_id}`)
    .digest('hex')
    .slice(0, 32);
}

/**
 * The owner of a chat's conversation: the chat itself (chat users are not service users). Also
 * its session id, a reserved one (`chat:`) that no client's invoke may name.
 */
export function chatSessionOwner(job: Pick<ChatMessageJob, 'platform' | 'chat_id'>): string {
  return chatSessionId(job.platform, job.chat_id);
}

async function runAgent(
  job: ChatMessageJob,
  deps: ChatReplyDeps,
  llm: RunModel,
  signal: AbortSignal,
): Promise<string> {
  const owner = chatSessionOwner(job);
  // `ask`: a chat's members are not the service's users and get no write tools; no node tools
  // either, since the conversation belongs to the chat.
  const request = runRequest({
    userId: owner,
    sessionId: owner,
    message: job.text,
    model: llm,
    mode: 'ask',
  });
  const run = await prepareWhenFree(deps.runner, request, signal);
  const { text, error } = await runToText(run, signal);
  if (error && text === '') return `Sorry, I could not answer this time (${error.message}).`;
  return text.trim() || 'I have no answer to that.';
}

/**
 * Claims the chat's session, waiting while it is busy: another message of the same chat is being
 * answered (messages of a chat are answered one after another), or a worker that died mid-run
 * still holds its lease (free within the lease TTL). Waiting, rather than failing the attempt,
 * keeps a crash from using up the job's retries and losing the message.
 */
async function prepareWhenFree(
  runner: AgentRunner,
  request: RunRequest,
  signal: AbortSignal,
): Promise<PreparedRun> {
  const deadline = Date.now() + 3 * DEFAULT_LEASE_TTL_MS;
  for (;;) {
    try {
      return await runner.prepare(request);
    } catch (error) {
      if (!(error instanceof SessionBusyError) || Date.now() > deadline || signal.aborted)
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

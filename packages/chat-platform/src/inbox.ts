import type { JobQueue } from '@agent-backend/jobs';
import { ChatMessageJob } from '@agent-backend/protocol';
import type { Database, Queryable } from '@agent-backend/store';

/** The queue of chat messages: the api's webhook adds to it, the worker answers from it. */
export const CHAT_MESSAGE_QUEUE = 'chat-messages';

/**
 * How long an unanswered message is queued again: past this, the platform's user has long
 * given up on an answer, and the row only waits to be deleted.
 */
export const INBOX_REQUEUE_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long rows are kept at all (answered or not), for support questions. */
export const INBOX_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * The durable record of every chat-platform message acknowledged to the platform, in the store
 * (PostgreSQL or PGlite), next to its job in the queue.
 *
 * Why: the queue lives in Redis, and a Redis that restarts empty (no persistence, a failover to
 * a replica that had not caught up, a flush) took every acknowledged message that had not been
 * answered yet with it; the platform does not deliver an acknowledged event again (found by
 * tests/faults/redis-restart.test.ts). The row is written before the acknowledgement, marked
 * when the reply went out, and {@link requeueUnanswered} hands unanswered rows to the queue
 * again. The queue ignores a job id it still holds, so that is harmless when nothing was lost.
 */
export class ChatInbox {
  constructor(private readonly db: Queryable) {}

  /** Records the message; a second delivery of the same event keeps the first row. */
  async record(job: ChatMessageJob): Promise<void> {
    await this.db.query(
      `INSERT INTO chat_inbox (platform, event_id, job) VALUES ($1, $2, $3)
       ON CONFLICT (platform, event_id) DO NOTHING`,
      [job.platform, job.event_id, JSON.stringify(job)],
    );
  }

  /** Has the message been answered (by this or any earlier attempt)? */
  async isReplied(job: Pick<ChatMessageJob, 'platform' | 'event_id'>): Promise<boolean> {
    const { rows } = await this.db.query<{ replied: boolean }>(
      `SELECT replied_at IS NOT NULL AS replied FROM chat_inbox
       WHERE platform = $1 AND event_id = $2`,
      [job.platform, job.event_id],
    );
    return rows[0]?.replied ?? false;
  }

  /**
   * Marks the message answered. A job queued before this table existed has no row: it gets
   * one, answered, so a retry finds it.
   */
  async markReplied(job: ChatMessageJob): Promise<void> {
    await this.db.query(
      `INSERT INTO chat_inbox (platform, event_id, job, replied_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (platform, event_id) DO UPDATE SET replied_at = now()`,
      [job.platform, job.event_id, JSON.stringify(job)],
    );
  }

  /**
   * Unanswered messages received between {@link INBOX_REQUEUE_WINDOW_MS} and `minAgeMs` ago,
   * oldest first (ties by platform and event id), `limit` rows at most: a page, after the
   * message `after` when given. `rows` counts the page's rows, `jobs` leaves out those whose job
   * no longer parses (they cannot be answered); `last` is the page's last message.
   */
  async unanswered(
    minAgeMs: number,
    limit: number,
    after?: InboxCursor,
  ): Promise<{ jobs: ChatMessageJob[]; rows: number; last: InboxCursor | undefined }> {
    const { rows } = await this.db.query<{ job: unknown; platform: string; event_id: string }>(
      `SELECT job, platform, event_id FROM chat_inbox
       WHERE replied_at IS NULL
         AND received_at < now() - make_interval(secs => $1::float8 / 1000)
         AND received_at > now() - make_interval(secs => $2::float8 / 1000)
         ${
           after
             ? `AND (received_at, platform, event_id) > (SELECT received_at, platform, event_id
                  FROM chat_inbox WHERE platform = $4 AND event_id = $5)`
             : ''
         }
       ORDER BY received_at, platform, event_id LIMIT $3`,
      [
        minAgeMs,
        INBOX_REQUEUE_WINDOW_MS,
        limit,
        ...(after ? [after.platform, after.event_id] : []),
      ],
    );
    const jobs = rows.flatMap((r) => {
      const parsed = ChatMessageJob.safeParse(r.job);
      return parsed.success ? [parsed.data] : [];
    });
    const tail = rows[rows.length - 1];
    return {
      jobs,
      rows: rows.length,
      last: tail && { platform: tail.platform, event_id: tail.event_id },
    };
  }

  /** Deletes rows older than {@link INBOX_RETENTION_MS}; returns how many. */
  async prune(): Promise<number> {
    const { rowCount } = await this.db.query(
      `DELETE FROM chat_inbox WHERE received_at < now() - make_interval(secs => $1::float8 / 1000)`,
      [INBOX_RETENTION_MS],
    );
    return rowCount;
  }
}

/** The job id of a message: one job per event, whoever queues it and however often. */
export function chatMessageJobId(job: Pick<ChatMessageJob, 'platform' | 'event_id'>): string {
  return `${job.platform}-${job.event_id}`;
}

/**
 * Accepts a message from the webhook: recorded in the inbox first, then queued. Either failing
 * rejects, and the webhook answers 503 so the platform delivers the event again.
 */
export async function acceptChatMessage(
  deps: { db: Database; jobs: JobQueue },
  job: ChatMessageJob,
): Promise<void> {
  await new ChatInbox(deps.db).record(job);
  await deps.jobs.add(CHAT_MESSAGE_QUEUE, job, { jobId: chatMessageJobId(job) });
}

/** Where a pass over the unanswered messages stopped: the last message it handed over. */
export interface InboxCursor {
  readonly platform: string;
  readonly event_id: string;
}

/**
 * Queues unanswered messages at least `minAgeMs` old again, `limit` at most, after the message
 * `after` (where the previous call stopped) when given. The queue ignores ids it still holds
 * (waiting, running, retrying, finished or failed within its retention), so only messages the
 * queue lost run again. Returns how many were handed over and where to go on next time: past
 * the last one, or from the oldest again once the window was read to its end (`next`
 * undefined). So calls passing `next` along reach every unanswered message, however many older
 * ones the queue still holds or failed for good.
 */
export async function requeueUnanswered(
  deps: { db: Database; jobs: JobQueue },
  options: { minAgeMs: number; limit: number; after?: InboxCursor },
): Promise<{ requeued: number; next: InboxCursor | undefined }> {
  const page = await new ChatInbox(deps.db).unanswered(
    options.minAgeMs,
    options.limit,
    options.after,
  );
  for (const job of page.jobs) {
    await deps.jobs.add(CHAT_MESSAGE_QUEUE, job, { jobId: chatMessageJobId(job) });
  }
  return {
    requeued: page.jobs.length,
    next: page.rows < options.limit ? undefined : page.last,
  };
}

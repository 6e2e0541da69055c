import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqJobQueue } from '@agent-backend/jobs';
import type { ChatMessageJob } from '@agent-backend/protocol';
import { createPgliteDatabase, migrate, type Database } from '@agent-backend/store';
import { testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import {
  CHAT_MESSAGE_QUEUE,
  chatMessageJobId,
  requeueUnanswered,
  type InboxCursor,
} from './inbox.js';

/**
 * The inbox check over a real store and a real BullMQ queue: messages the queue still holds come
 * first in the inbox, and a message the queue lost behind them is queued again all the same.
 */
describe('requeueUnanswered', () => {
  let db: Database;
  let connection: Redis;
  let jobs: Awaited<ReturnType<typeof createBullmqJobQueue>>;

  beforeAll(async () => {
    db = await createPgliteDatabase();
    await migrate(db);
    connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    jobs = await createBullmqJobQueue({ connection, prefix: `${uniquePrefix('inbox')}bull` });
  });
  afterAll(async () => {
    await jobs?.bullmq.queue(CHAT_MESSAGE_QUEUE).obliterate({ force: true });
    await jobs?.close();
    await connection?.quit();
    await db?.close();
  });

  const message = (eventId: string): ChatMessageJob => ({
    platform: 'feishu',
    event_id: eventId,
    message_id: `om_${eventId}`,
    chat_id: 'oc_chat',
    text: `message ${eventId}`,
  });
  /** An acknowledged message received `ageS` seconds ago and not answered. */
  const received = (job: ChatMessageJob, ageS: number) =>
    db.query(
      `INSERT INTO chat_inbox (platform, event_id, job, received_at)
       VALUES ($1, $2, $3, now() - make_interval(secs => $4))`,
      [job.platform, job.event_id, JSON.stringify(job), ageS],
    );
  /** The event ids of the jobs waiting in the queue, each as often as it is there. */
  const waiting = async () =>
    (await jobs.bullmq.queue(CHAT_MESSAGE_QUEUE).getJobs(['waiting']))
      .map((job) => (job.data as ChatMessageJob).event_id)
      .sort();

  it('reaches a lost message behind pages of messages the queue still holds', async () => {
    // Five older messages whose jobs the queue holds (waiting: no worker here), then one it lost.
    const held = ['e1', 'e2', 'e3', 'e4', 'e5'].map(message);
    for (const [i, job] of held.entries()) {
      await received(job, 600 - i);
      await jobs.add(CHAT_MESSAGE_QUEUE, job, { jobId: chatMessageJobId(job) });
    }
    const lost = message('e6');
    await received(lost, 60);
    // A younger one, not yet old enough to be taken for lost.
    await received(message('e7'), 1);

    const passes: Array<{ requeued: number; next: InboxCursor | undefined }> = [];
    let after: InboxCursor | undefined;
    for (let check = 0; check < 3; check++) {
      const pass = await requeueUnanswered(
        { db, jobs },
        { minAgeMs: 10_000, limit: 2, ...(after ? { after } : {}) },
      );
      passes.push(pass);
      after = pass.next;
    }
    // The lost one is queued again by the third check; the young one is not yet.
    expect(await waiting()).toEqual(['e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
    // Pages of two: e1-e2, e3-e4, e5-e6 (a full page: the window's end shows next time).
    expect(passes.map((p) => p.requeued)).toEqual([2, 2, 2]);
    expect(passes.map((p) => p.next?.event_id)).toEqual(['e2', 'e4', 'e6']);
    // The window read to its end: the next pass starts from the oldest again.
    const end = await requeueUnanswered({ db, jobs }, { minAgeMs: 10_000, limit: 2, after });
    expect(end).toEqual({ requeued: 0, next: undefined });
    const again = await requeueUnanswered({ db, jobs }, { minAgeMs: 10_000, limit: 2 });
    expect(again.next?.event_id).toBe('e2');
    // Each message is queued once: the queue ignored the ids it held.
    expect(await waiting()).toEqual(['e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
  });
});

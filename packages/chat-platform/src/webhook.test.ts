import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqJobQueue } from '@agent-backend/jobs';
import { createLogger } from '@agent-backend/logger';
import { startTcpProxy, testRedisUrl, uniquePrefix, type TcpProxy } from '@agent-backend/testing';
import { CHAT_MESSAGE_QUEUE, chatMessageJobId } from './inbox.js';
import { ACK, handleWebhook } from './webhook.js';

const TOKEN = 'verification-token';

const messageEvent = (eventId: string) =>
  JSON.stringify({
    schema: '2.0',
    header: { event_id: eventId, event_type: 'im.message.receive_v1', token: TOKEN },
    event: {
      sender: { sender_id: { open_id: 'ou_user1' }, sender_type: 'user' },
      message: {
        message_id: `om_${eventId}`,
        chat_id: 'oc_chat',
        chat_type: 'p2p',
        message_type: 'text',
        content: JSON.stringify({ text: 'hello' }),
      },
    },
  });

/** The webhook queuing into BullMQ on a Redis behind a proxy the test can stall. */
describe('chat-platform webhook while Redis stalls', () => {
  let proxy: TcpProxy;
  let connection: Redis;
  let jobs: Awaited<ReturnType<typeof createBullmqJobQueue>>;
  const prefix = `${uniquePrefix('webhook')}bull`;

  beforeAll(async () => {
    const url = new URL(testRedisUrl());
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 6379) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    connection = new Redis(url.toString(), { maxRetriesPerRequest: null });
    // No command timeout of its own: only the webhook's deadline can end the wait.
    jobs = await createBullmqJobQueue({ connection, prefix });
  });
  afterAll(async () => {
    proxy.setMode('forward');
    const queue = jobs.bullmq.queue(CHAT_MESSAGE_QUEUE);
    await queue.obliterate({ force: true });
    await jobs.close();
    await connection.quit();
    await proxy.close();
  });

  const deliver = (eventId: string) =>
    handleWebhook(
      'feishu',
      messageEvent(eventId),
      {},
      {
        logger: createLogger({ level: 'silent' }),
        verificationToken: TOKEN,
        enqueue: async (job) => {
          await jobs.add(CHAT_MESSAGE_QUEUE, job, { jobId: chatMessageJobId(job) });
        },
        acceptTimeoutMs: 300,
      },
    );
  const queuedIds = async () =>
    (await jobs.bullmq.queue(CHAT_MESSAGE_QUEUE).getJobs(['waiting']))
      .map((job) => (job.data as { event_id: string }).event_id)
      .sort();

  it('queues one job per event, however often the event is delivered', async () => {
    expect(await deliver('ev-1')).toEqual({ status: 200, body: ACK });
    // The platform's retry, or the same event at another replica.
    expect(await deliver('ev-1')).toEqual({ status: 200, body: ACK });
    expect(await queuedIds()).toEqual(['ev-1']);
  });

  it('answers 503 within its deadline, and the retry after the stall is queued once', async () => {
    proxy.setMode('stall');
    // The queue gets no reply: the platform is told to retry rather than left waiting.
    expect(await deliver('ev-2')).toEqual({
      status: 503,
      body: { code: 503, msg: 'temporarily unable to accept events' },
    });
    proxy.setMode('forward');
    // The platform's retry is accepted; the refused attempt's add also went on once the stall
    // ended, and both carry the event id as the job id, so the queue holds one job.
    expect(await deliver('ev-2')).toEqual({ status: 200, body: ACK });
    expect(await queuedIds()).toEqual(['ev-1', 'ev-2']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisEphemeralStore, type EphemeralStore } from '@agent-backend/ephemeral';
import { createLogger } from '@agent-backend/logger';
import type { ChatMessageJob } from '@agent-backend/protocol';
import { startTcpProxy, testRedisUrl, uniquePrefix, type TcpProxy } from '@agent-backend/testing';
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

/** The webhook with its dedup store on a Redis behind a proxy the test can stall. */
describe('chat-platform webhook while Redis stalls', () => {
  let proxy: TcpProxy;
  let ephemeral: EphemeralStore;
  const queued: ChatMessageJob[] = [];

  beforeAll(async () => {
    const url = new URL(testRedisUrl());
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 6379) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    // No command timeout of its own: only the webhook's deadline can end the wait.
    ephemeral = createRedisEphemeralStore({ url: url.toString(), prefix: uniquePrefix('webhook') });
  });
  afterAll(async () => {
    proxy.setMode('forward');
    await ephemeral.close();
    await proxy.close();
  });

  const deliver = (eventId: string) =>
    handleWebhook(
      'feishu',
      messageEvent(eventId),
      {},
      {
        ephemeral,
        logger: createLogger({ level: 'silent' }),
        verificationToken: TOKEN,
        enqueue: (job) => {
          queued.push(job);
          return Promise.resolve();
        },
        acceptTimeoutMs: 300,
      },
    );

  it('answers 503 within its deadline, and the retry after the stall is queued', async () => {
    expect(await deliver('ev-1')).toEqual({ status: 200, body: ACK });
    proxy.setMode('stall');
    // The dedup write gets no reply: the platform is told to retry rather than left waiting.
    expect(await deliver('ev-2')).toEqual({
      status: 503,
      body: { code: 503, msg: 'temporarily unable to accept events' },
    });
    proxy.setMode('forward');
    // The platform's retry: the held dedup write has landed by now, so the retry looks like a
    // duplicate, and is queued all the same.
    expect(await deliver('ev-2')).toEqual({ status: 200, body: ACK });
    // The refused attempt also went on once the stall ended and queued its job: both carry the
    // event id as the job id, so the queue keeps one.
    expect(queued.map((job) => job.event_id)).toEqual(['ev-1', 'ev-2', 'ev-2']);
  });
});

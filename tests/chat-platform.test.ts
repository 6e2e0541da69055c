import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeLark,
  startScriptedModel,
  testRedisUrl,
  textReply,
  type FakeLark,
  type ScriptedModel,
} from '@agent-backend/testing';
import { Redis } from 'ioredis';
import { createPostgresDatabase } from '@agent-backend/store';
import { startCluster, type Cluster } from './cluster.js';
import { larkMessageEvent, larkWebhookRequest } from './lark-delivery.js';
import { eventually } from './ws-client.js';

const ENCRYPT_KEY = 'enc-key-for-tests';
const TOKEN = 'verification-token';
const MODEL = 'chat-model';

/**
 * The chat-platform webhook (spec 4.5) on two API replicas and the replies from workers on
 * BullMQ: the fake open platform receives the replies, a scripted model answers.
 */
describe('chat platform', () => {
  let cluster: Cluster;
  let lark: FakeLark;
  let model: ScriptedModel;
  let seq = 0;

  const APP = { appId: 'cli_test', encryptKey: ENCRYPT_KEY, token: TOKEN };
  const messageEvent = (text: string, chatId = 'oc_chat1', eventId = `ev-${++seq}-${Date.now()}`) =>
    larkMessageEvent(APP, { eventId, chatId, text });
  const wire = (event: unknown, options: { timestamp?: number; signature?: string } = {}) =>
    larkWebhookRequest(APP, event, options);
  const deliver = async (
    api: number,
    request: { body: string; headers: Record<string, string> },
    platform = 'feishu',
  ) => {
    const res = await fetch(`${cluster.apis[api]!.url}/channels/${platform}/webhook`, {
      method: 'POST',
      ...request,
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const repliesTo = (messageId: string) =>
    lark.messages.filter((m) => m.kind === 'reply' && m.target === messageId);

  beforeAll(async () => {
    lark = await startFakeLark({ appId: 'cli_test', appSecret: 'lark-secret' });
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 0,
      apis: 2,
      workers: 1,
      env: {
        LARK_APP_ID: 'cli_test',
        LARK_APP_SECRET: 'lark-secret',
        LARK_API_BASE_URL: lark.url,
        LARK_ENCRYPT_KEY: ENCRYPT_KEY,
        LARK_VERIFICATION_TOKEN: TOKEN,
        DEFAULT_LLM_BASE_URL: model.baseUrl,
        DEFAULT_LLM_MODEL: MODEL,
        DEFAULT_LLM_API_KEY: 'sk-chat-secret',
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        JOBS_LOCK_MS: '2000',
        // One completed job kept per queue: a platform retry outlives its job (`JOBS_KEEP_*`).
        JOBS_KEEP_COMPLETED_COUNT: '1',
      },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
    await lark?.close();
    await model?.close();
  });

  it('echoes an encrypted url_verification challenge', async () => {
    const request = wire({ type: 'url_verification', challenge: 'challenge-42', token: TOKEN });
    expect(
      await deliver(0, { body: request.body, headers: { 'content-type': 'application/json' } }),
    ).toEqual({
      status: 200,
      body: { challenge: 'challenge-42' },
    });
  });

  it('processes an event delivered to both API replicas at once exactly once, and replies in the chat', async () => {
    model.script(MODEL, [textReply('Hello from the agent')]);
    const event = messageEvent('hi there');
    const request = wire(event);
    const answers = await Promise.all([
      deliver(0, request),
      deliver(1, request),
      deliver(0, request),
    ]);
    for (const answer of answers)
      expect(answer).toEqual({ status: 200, body: { code: 0, msg: 'success' } });

    const messageId = event.event.message.message_id;
    await eventually(async () => repliesTo(messageId).length > 0, 20_000);
    expect(repliesTo(messageId).map((m) => m.content)).toEqual([{ text: 'Hello from the agent' }]);
    // Give a duplicate time to show up if there were one.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(repliesTo(messageId)).toHaveLength(1);
    expect(model.requests(MODEL)).toHaveLength(1);
  });

  it('continues the chat conversation on the next message', async () => {
    model.script(MODEL, [textReply('First answer'), textReply('Second answer')]);
    const first = messageEvent('remember the word kiwi', 'oc_memory');
    await deliver(0, wire(first));
    await eventually(async () => repliesTo(first.event.message.message_id).length > 0, 20_000);
    const second = messageEvent('which word?', 'oc_memory');
    await deliver(1, wire(second));
    await eventually(async () => repliesTo(second.event.message.message_id).length > 0, 20_000);
    const last = model.requests(MODEL).at(-1)!;
    const texts = JSON.stringify(last.body.messages);
    expect(texts).toContain('remember the word kiwi');
    expect(texts).toContain('First answer');
  });

  it("keeps a chat's session the chat's: a user cannot invoke it, and the chat still gets its reply", async () => {
    const chatId = 'oc_takeover';
    const sessionId = `chat:feishu:${chatId}`;
    const mallory = await cluster.token('mallory');
    const taken = await fetch(`${cluster.apis[1]!.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${mallory}` },
      body: JSON.stringify({
        message: 'this chat is mine now',
        session_id: sessionId,
        sandbox_mode: 'none',
        llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-mallory', modelName: 'mallory-model' },
      }),
    });
    expect(taken.status).toBe(400);
    expect(((await taken.json()) as { error: { code: string } }).error.code).toBe(
      'session_id_reserved',
    );
    // A session of that id that a user took before the upgrade is that user's alone now.
    const db = await createPostgresDatabase({
      url: cluster.env.DATABASE_URL!,
      schema: cluster.env.DATABASE_SCHEMA!,
    });
    try {
      await db.query(`INSERT INTO agent_sessions (user_id, session_id) VALUES ('mallory', $1)`, [
        sessionId,
      ]);
    } finally {
      await db.close();
    }

    model.script(MODEL, [textReply('Still your assistant')]);
    const event = messageEvent('are you there?', chatId);
    expect(await deliver(0, wire(event))).toEqual({
      status: 200,
      body: { code: 0, msg: 'success' },
    });
    const messageId = event.event.message.message_id;
    await eventually(async () => repliesTo(messageId).length > 0, 20_000);
    expect(repliesTo(messageId).map((m) => m.content)).toEqual([{ text: 'Still your assistant' }]);
    expect(model.requests('mallory-model')).toHaveLength(0);
  });

  it('refuses forged, replayed and malformed requests, and acknowledges other event types', async () => {
    const event = messageEvent('forged');
    expect(await deliver(0, wire(event, { signature: 'f'.repeat(64) }))).toEqual({
      status: 401,
      body: { code: 401, msg: 'signature does not match' },
    });
    expect(
      await deliver(1, wire(event, { timestamp: Math.floor(Date.now() / 1000) - 3600 })),
    ).toMatchObject({ status: 401 });
    const wrongToken = { ...event, header: { ...event.header, token: 'nope' } };
    expect(await deliver(0, wire(wrongToken))).toEqual({
      status: 401,
      body: { code: 401, msg: 'verification token does not match' },
    });
    expect(
      await deliver(0, { body: '{"encrypt": 1', headers: { 'content-type': 'application/json' } }),
    ).toMatchObject({ status: 400 });
    expect(
      await deliver(0, {
        body: JSON.stringify(event),
        headers: { 'content-type': 'application/json' },
      }),
    ).toMatchObject({
      status: 400,
    });
    const other = {
      ...event,
      header: { ...event.header, event_type: 'im.chat.member.bot.added_v1', event_id: 'ev-other' },
    };
    expect(await deliver(1, wire(other))).toEqual({
      status: 200,
      body: { code: 0, msg: 'success' },
    });
    expect(await deliver(0, wire(event), 'slack')).toMatchObject({ status: 404 });
    await new Promise((r) => setTimeout(r, 500));
    expect(repliesTo(event.event.message.message_id)).toHaveLength(0);
  });

  it('a platform retry after its job left the queue finds the message answered: no second run or reply', async () => {
    model.script(MODEL, [textReply('The only answer'), textReply('Answer to the next one')]);
    const first = messageEvent('answer once', 'oc_retention');
    const messageId = first.event.message.message_id;
    const jobKey = `${cluster.prefix}bull:chat-messages:job_feishu-${first.header.event_id}`;
    const redis = new Redis(testRedisUrl());
    try {
      await deliver(0, wire(first));
      await eventually(async () => repliesTo(messageId).length > 0, 20_000);
      // The next message's job pushes the first one's out of the queue (one completed kept).
      const next = messageEvent('the next one', 'oc_retention_next');
      await deliver(1, wire(next));
      await eventually(async () => repliesTo(next.event.message.message_id).length > 0, 20_000);
      await eventually(async () => (await redis.exists(jobKey)) === 0, 20_000);
      const requests = model.requests(MODEL).length;

      // The platform delivers the first event again: queued again, as its job is gone.
      expect(await deliver(1, wire(first))).toEqual({
        status: 200,
        body: { code: 0, msg: 'success' },
      });
      await eventually(async () => (await redis.hget(jobKey, 'finishedOn')) !== null, 20_000);
      // The job found the message answered in the inbox: no agent run, no second reply.
      expect(model.requests(MODEL)).toHaveLength(requests);
      expect(repliesTo(messageId).map((m) => m.content)).toEqual([{ text: 'The only answer' }]);
    } finally {
      redis.disconnect();
    }
  });

  // Up to a lease TTL (30 s) passes before the dead worker's hold on the chat's session ends.
  it(
    'a worker killed mid-job loses nothing and doubles nothing',
    { timeout: 120_000 },
    async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      model.script(MODEL, [
        {
          kind: 'stream',
          pieces: [{ waitFor: held }, { text: 'never delivered' }, { finish: 'stop' }],
        },
        textReply('Answer after the crash'),
      ]);
      const before = model.requests(MODEL).length;
      const event = messageEvent('survive a crash', 'oc_crash');
      await deliver(0, wire(event));
      await model.waitForRequests(MODEL, before + 1, 20_000);
      await cluster.workers[0]!.stop('SIGKILL');
      await cluster.startReplica('worker', 'worker-2');
      const messageId = event.event.message.message_id;
      await eventually(async () => repliesTo(messageId).length > 0, 90_000);
      release();
      await new Promise((r) => setTimeout(r, 1_000));
      expect(repliesTo(messageId).map((m) => m.content)).toEqual([
        { text: 'Answer after the crash' },
      ]);
    },
  );

  it(
    'answers a message acknowledged just before Redis lost its data, once',
    { timeout: 90_000 },
    async () => {
      // No worker runs while the message waits: its job exists only in Redis.
      await Promise.all(cluster.workers.map((w) => w.stop('SIGKILL')));
      model.script(MODEL, [textReply('Answer from the inbox')]);
      const event = messageEvent('do not lose me', 'oc_redis_lost');
      expect(await deliver(1, wire(event))).toEqual({
        status: 200,
        body: { code: 0, msg: 'success' },
      });
      // Redis restarted empty (no persistence): every key of this deployment is gone, the
      // queued job, the dedup key and the queue's record of job ids among them.
      const redis = new Redis(testRedisUrl());
      try {
        const keys = await redis.keys(`${cluster.prefix}*`);
        expect(keys.some((k) => k.includes('chat-messages'))).toBe(true);
        await redis.del(...keys);
      } finally {
        redis.disconnect();
      }
      await cluster.startReplica('worker', 'worker-3');
      const messageId = event.event.message.message_id;
      await eventually(async () => repliesTo(messageId).length > 0, 60_000);
      // Later checks of the inbox find it answered: no second reply.
      await new Promise((r) => setTimeout(r, 6_000));
      expect(repliesTo(messageId).map((m) => m.content)).toEqual([
        { text: 'Answer from the inbox' },
      ]);
    },
  );

  it(
    'replies once when the worker dies after sending the reply, before marking it',
    { timeout: 90_000 },
    async () => {
      model.script(MODEL, [textReply('The one reply'), textReply('The same reply, again')]);
      const before = model.requests(MODEL).length;
      // The platform sends the reply but its answer does not arrive before the worker dies: the
      // worker never marks the message answered, and its job is run again by the next worker.
      const release = lark.holdAnswers();
      const event = messageEvent('answer me once', 'oc_reply_crash');
      const messageId = event.event.message.message_id;
      try {
        await deliver(0, wire(event));
        await eventually(async () => repliesTo(messageId).length > 0, 30_000);
        await Promise.all(cluster.workers.map((w) => w.stop('SIGKILL')));
      } finally {
        release();
      }
      const deduplicated = lark.deduplicated;
      await cluster.startReplica('worker', 'worker-4');
      // The next attempt runs the agent again and sends the reply with the same uuid.
      await model.waitForRequests(MODEL, before + 2, 60_000);
      await eventually(
        async () => lark.deduplicated > deduplicated || repliesTo(messageId).length > 1,
        30_000,
      );
      expect(repliesTo(messageId).map((m) => m.content)).toEqual([{ text: 'The one reply' }]);
    },
  );

  it('never logs the app secret, the model key or the encrypt key', () => {
    const logs = [...cluster.apis, ...cluster.workers]
      .flatMap((s) => [...s.stdout, ...s.stderr])
      .join('\n');
    for (const secret of ['lark-secret', 'sk-chat-secret', ENCRYPT_KEY])
      expect(logs).not.toContain(secret);
  });
});

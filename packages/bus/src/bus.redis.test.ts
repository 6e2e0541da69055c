import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import { testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Bus } from './bus.js';
import { describeBusContract } from './bus.contract.js';
import { encodeEnvelope } from './envelope.js';
import { BusTimeoutError } from './errors.js';
import { createRedisBus } from './redis-bus.js';

describeBusContract('redis', async (count, { onError }) => {
  const url = testRedisUrl();
  const prefix = uniquePrefix('bus');
  const nodes = Array.from({ length: count }, () => createRedisBus({ url, prefix, onError }));
  const raw = createRedis(url, { name: 'test-bus-raw' });
  // Both connections of every node are up before a test starts timing anything.
  await Promise.all(
    nodes.map(async (node) => {
      await node.publish('warm-up', null);
      await (await node.subscribe('warm-up', () => undefined)).unsubscribe();
    }),
  );
  return {
    nodes,
    injectRaw: async (channel, payload) => {
      await raw.publish(redisKeys(prefix).busChannel(channel), payload);
    },
    dispose: async () => {
      await Promise.all(nodes.map((node) => node.close()));
      await closeRedis(raw);
    },
  };
});

describe('redis bus adapter', () => {
  const url = testRedisUrl();
  let prefix: string;
  let raw: Redis;
  const open: Bus[] = [];
  const node = (options: { prefix?: string } = {}): Bus => {
    const bus = createRedisBus({ url, prefix, onError: () => undefined, ...options });
    open.push(bus);
    return bus;
  };

  beforeEach(() => {
    prefix = uniquePrefix('bus');
    raw = createRedis(url, { name: 'test-bus-raw' });
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((bus) => bus.close()));
    await closeRedis(raw);
  });

  async function clientId(name: string): Promise<string> {
    const list = (await raw.client('LIST')) as string;
    const line = list.split('\n').find((l) => l.includes(` name=${name} `));
    const id = line?.match(/^id=(\d+)/)?.[1];
    if (!id) throw new Error(`no connection named ${name}`);
    return id;
  }

  it('answers a request delivered twice once (a PUBLISH re-sent after a reconnect)', async () => {
    const responder = node();
    let calls = 0;
    await responder.respond('svc', () => ++calls);
    const request = encodeEnvelope({ v: 1, k: 'req', from: 'ghost', id: 'r-1', body: {} });
    await raw.publish(redisKeys(prefix).busRequests('svc'), request);
    await raw.publish(redisKeys(prefix).busRequests('svc'), request);
    await vi.waitFor(() => expect(calls).toBe(1));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(calls).toBe(1);
  });

  it('names its two connections after the node', async () => {
    const bus = node();
    await bus.publish('warm', 1);
    await expect(clientId(`bus-pub:${bus.nodeId}`)).resolves.toMatch(/^\d+$/);
    await bus.subscribe('warm', () => undefined);
    await expect(clientId(`bus-sub:${bus.nodeId}`)).resolves.toMatch(/^\d+$/);
  });

  it('resubscribes after its subscriber connection is killed', async () => {
    const [a, b] = [node(), node()];
    const got: unknown[] = [];
    await a.subscribe('survive', (m) => void got.push(m));
    await a.respond('survive', () => 'pong');
    await raw.client('KILL', 'ID', await clientId(`bus-sub:${a.nodeId}`));
    let i = 0;
    await vi.waitFor(
      async () => {
        await b.publish('survive', i++);
        expect(got.length).toBeGreaterThan(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(await b.request('survive', 'ping', { timeoutMs: 5_000 })).toBe('pong');
  });

  it('delivers a reply answered while the requester was resubscribing', async () => {
    const [caller, responder] = [node(), node()];
    let answer!: (value: string) => void;
    let asked!: () => void;
    const reached = new Promise<void>((resolve) => (asked = resolve));
    await responder.respond('slow', () => {
      asked();
      return new Promise<string>((resolve) => (answer = resolve));
    });
    const reply = caller.request('slow', 'ping', { timeoutMs: 5_000 });
    await reached;
    // The caller's inbox is gone from Redis when the answer is published: nobody receives it.
    await raw.client('KILL', 'ID', await clientId(`bus-sub:${caller.nodeId}`));
    answer('pong');
    await expect(reply).resolves.toBe('pong');
  });

  it('asks again for replies sent uncounted while its inbox was resubscribing', async () => {
    const [caller, responder] = [node(), node()];
    const answers: Array<(value: string) => void> = [];
    await responder.respond('slow', (message) =>
      message === 'warm' ? 'warm' : new Promise<string>((resolve) => answers.push(resolve)),
    );
    // The responder's reply connection opens at its first reply and then takes the next ones.
    await caller.request('slow', 'warm', { timeoutMs: 5_000 });
    await vi.waitFor(() => clientId(`bus-reply:${responder.nodeId}`));
    const asked: unknown[] = [];
    const watcher = createRedis(url, { name: 'test-bus-watch' });
    try {
      watcher.on('message', (_c: string, payload: string) => void asked.push(JSON.parse(payload)));
      await watcher.subscribe(redisKeys(prefix).busRequests('slow'));
      const replies = [1, 2].map(() => caller.request('slow', 'ping', { timeoutMs: 5_000 }));
      await vi.waitFor(() => expect(answers).toHaveLength(2));
      await raw.client('KILL', 'ID', await clientId(`bus-sub:${caller.nodeId}`));
      // Published with nobody subscribed: no receiver count says so, and they are not repeated.
      answers[0]!('one');
      answers[1]!('two');
      await expect(Promise.all(replies)).resolves.toEqual(['one', 'two']);
      // The watcher reads the `again` in the same turn as the responder, at the latest.
      await vi.waitFor(() =>
        expect(asked.filter((e) => (e as { k: string }).k === 'again')).toHaveLength(1),
      );
      const again = asked.filter((e) => (e as { k: string }).k === 'again');
      expect(again).toEqual([{ v: 1, k: 'again', from: caller.nodeId, ids: expect.any(Array) }]);
      expect((again[0] as { ids: string[] }).ids).toHaveLength(2);
      expect(asked.filter((e) => (e as { ag?: number }).ag === 1)).toHaveLength(2);
    } finally {
      await closeRedis(watcher);
    }
  });

  it('asks again until heard when the responder was resubscribing too', async () => {
    const [caller, responder] = [node(), node()];
    let answer!: (value: string) => void;
    await responder.respond('both', (message) =>
      message === 'warm' ? 'warm' : new Promise<string>((resolve) => (answer = resolve)),
    );
    await caller.request('both', 'warm', { timeoutMs: 5_000 });
    await vi.waitFor(() => clientId(`bus-reply:${responder.nodeId}`));
    const reply = caller.request('both', 'ping', { timeoutMs: 5_000 });
    await vi.waitFor(() => expect(answer).toBeTypeOf('function'));
    // Both subscriber connections (not `TYPE pubsub`: other test files share this Redis).
    const ids = await Promise.all([caller, responder].map((b) => clientId(`bus-sub:${b.nodeId}`)));
    const killed = await raw
      .multi()
      .client('KILL', 'ID', ids[0]!)
      .client('KILL', 'ID', ids[1]!)
      .exec();
    expect(killed).toEqual([
      [null, 1],
      [null, 1],
    ]);
    answer('pong');
    await expect(reply).resolves.toBe('pong');
  });

  it('repeats a reply, counted, to a caller that does not ask again (an older replica)', async () => {
    const responder = node();
    await responder.respond('old', () => 'pong');
    await responder.request('old', 'warm', { timeoutMs: 5_000 }); // the reply connection is open
    await vi.waitFor(() => clientId(`bus-reply:${responder.nodeId}`));
    // A request without `ag` from a node whose inbox is not subscribed yet when it is answered.
    const request = encodeEnvelope({ v: 1, k: 'req', from: 'older', id: 'r-1', body: {} });
    await raw.publish(redisKeys(prefix).busRequests('old'), request);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const inbox = createRedis(url, { name: 'test-bus-older-inbox' });
    try {
      const got = new Promise((resolve) => inbox.on('message', (_c, p: string) => resolve(p)));
      await inbox.subscribe(redisKeys(prefix).busInbox('older'));
      expect(JSON.parse((await got) as string)).toMatchObject({
        k: 'res',
        id: 'r-1',
        body: 'pong',
      });
    } finally {
      await closeRedis(inbox);
    }
  });

  it('counts nodes, not subscriptions, and isolates by prefix', async () => {
    const [a, b] = [node(), node()];
    const other = node({ prefix: uniquePrefix('bus-other') });
    await a.subscribe('count', () => undefined);
    await a.subscribe('count', () => undefined);
    await a.respond('count', () => 1);
    await b.subscribe('count', () => undefined);
    await other.subscribe('count', () => undefined);
    expect(await b.publish('count', 'x')).toBe(2);
    const channel = redisKeys(prefix).busChannel('count');
    expect(await raw.pubsub('NUMSUB', channel)).toEqual([channel, 2]);
  });

  it('leaves connections it was given open, but unsubscribed', async () => {
    const publisher = createRedis(url, { name: 'test-bus-given-pub' });
    const subscriber = createRedis(url, { name: 'test-bus-given-sub' });
    try {
      const bus = createRedisBus({ publisher, subscriber, prefix });
      open.push(bus);
      await bus.subscribe('given', () => undefined);
      await bus.close();
      expect(await publisher.ping()).toBe('PONG');
      const channel = redisKeys(prefix).busChannel('given');
      expect(await raw.pubsub('NUMSUB', channel)).toEqual([channel, 0]);
    } finally {
      await Promise.all([closeRedis(publisher), closeRedis(subscriber)]);
    }
  });

  it('never hangs a request while Redis is unreachable', async () => {
    const errors: Error[] = [];
    const bus = createRedisBus({
      url: 'redis://127.0.0.1:1',
      prefix,
      onError: (e) => errors.push(e),
    });
    open.push(bus);
    await expect(bus.request('down', 1, { timeoutMs: 200 })).rejects.toBeInstanceOf(
      BusTimeoutError,
    );
    await vi.waitFor(() => expect(errors.length).toBeGreaterThan(0), { timeout: 10_000 });
    await bus.close();
  });
});

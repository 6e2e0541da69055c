import { randomId, testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { describe, expect, it, vi } from 'vitest';
import { closeRedis, connectionNameOf, createRedis } from './connection.js';
import { DEFAULT_REDIS_PREFIX, redisKeys } from './keys.js';
import { defineScript } from './script.js';

describe('redisKeys', () => {
  it('builds every name under the prefix, "ab:" by default', () => {
    const keys = redisKeys();
    expect(keys.prefix).toBe(DEFAULT_REDIS_PREFIX);
    expect(keys.busChannel('runs')).toBe('ab:bus:pub:runs');
    expect(keys.busRequests('runs')).toBe('ab:bus:req:runs');
    expect(keys.busInbox('n1')).toBe('ab:bus:inbox:n1');
    expect(keys.ephemeral('dedup:1')).toBe('ab:eph:dedup:1');
    expect(keys.presenceUser('u1')).toBe('ab:presence:user:u1');
    expect(keys.presenceReplicas()).toBe('ab:presence:replicas');
  });

  it('puts every name of a custom prefix under it', () => {
    const keys = redisKeys('test:x:');
    const names = [
      keys.busChannel('c'),
      keys.busRequests('c'),
      keys.busInbox('n'),
      keys.ephemeral('k'),
      keys.presenceUser('u'),
      keys.presenceReplicas(),
    ];
    expect(names.every((name) => name.startsWith('test:x:'))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
  });

  it('names exactly what earlier versions stored when not on a Cluster', () => {
    // Stored presence, queued jobs and run logs survive an upgrade only if these stay as they are.
    for (const keys of [redisKeys('ab:'), redisKeys('ab:', { cluster: false })]) {
      expect(keys.presenceUser('u1')).toBe('ab:presence:user:u1');
      expect(keys.presenceReplicas()).toBe('ab:presence:replicas');
      expect(keys.presenceUserOneSlot('u1')).toBe('ab:presence:user:u1');
      expect(keys.jobs()).toBe('ab:bull');
      expect(keys.runLog('r1')).toBe('ab:runlog:r1');
      expect(keys.limit('runs:u1')).toBe('ab:limit:runs:u1');
      expect(keys.ephemeral('k')).toBe('ab:eph:k');
    }
  });

  it('on a Cluster, tags the names used together with one slot per group, under the prefix', () => {
    const keys = redisKeys('ab:', { cluster: true });
    // A slot per user; the replicas' set, and the one-slot layout of older versions, as before.
    expect(keys.presenceUser('u1')).toBe('ab:{ab:presence:u1}:user:u1');
    expect(keys.presenceReplicas()).toBe('ab:{ab:presence}:replicas');
    expect(keys.presenceUserOneSlot('u1')).toBe('ab:{ab:presence}:user:u1');
    expect(keys.jobs()).toBe('ab:{ab:bull}');
    // One key per command: no tag, so Cluster spreads them over the slots.
    expect(keys.runLog('r1')).toBe('ab:runlog:r1');
    expect(keys.ephemeral('k')).toBe('ab:eph:k');
    expect(keys.busChannel('c')).toBe('ab:bus:pub:c');
  });
});

describe('createRedis', () => {
  it('connects at once under its name, and closes idempotently', async () => {
    const name = `test-conn-${randomId()}`;
    const redis = createRedis(testRedisUrl(), { name: `${name} with spaces` });
    try {
      expect(await redis.client('GETNAME')).toBe(`${name}-with-spaces`);
    } finally {
      await closeRedis(redis);
      await closeRedis(redis);
    }
    expect(redis.status).toBe('end');
  });

  it('closes a connection that cannot reach Redis without waiting for it', async () => {
    const redis = createRedis('redis://127.0.0.1:1', {
      name: 'test-down',
      onError: () => undefined,
    });
    const pending = redis.get('x').catch((err: unknown) => err);
    await closeRedis(redis);
    expect(await pending).toBeInstanceOf(Error);
  });
});

describe('createRedis for a subscriber', () => {
  /**
   * A SUBSCRIBE made while the connection shakes hands (status `connect`, also the state right
   * after every reconnect) is kept. Under ioredis 5.8.2+ it reached Redis before the ready
   * check's INFO, which Redis then refused in subscriber mode, and the connection lost the
   * subscription for good (ioredis issue #2037); ioredis 6 holds it until the handshake is done.
   */
  it('keeps a subscription made while the connection shakes hands, also after a reconnect', async () => {
    const prefix = uniquePrefix('redis-sub');
    const errors: Error[] = [];
    const sub = createRedis(testRedisUrl(), {
      name: `test-sub-${randomId()}`,
      onError: (err) => errors.push(err),
    });
    const pub = createRedis(testRedisUrl(), { name: 'test-sub-pub' });
    const channels: string[] = [];
    sub.on('connect', () => {
      const channel = `${prefix}${channels.length}`;
      channels.push(channel);
      void sub.subscribe(channel).catch((err: Error) => errors.push(err));
    });
    const receivers = async () => Promise.all(channels.map((channel) => pub.publish(channel, 'x')));
    try {
      await vi.waitFor(async () => expect(await receivers()).toEqual([1]), { timeout: 10_000 });
      const id = String(await pub.call('CLIENT', 'LIST'))
        .split('\n')
        .find((line) => line.includes(` name=${connectionNameOf(sub)} `))
        ?.match(/^id=(\d+)/)?.[1];
      await pub.client('KILL', 'ID', id!);
      await vi.waitFor(async () => expect(await receivers()).toEqual([1, 1]), { timeout: 10_000 });
      expect(channels).toHaveLength(2);
      expect(errors.filter((err) => /subscriber mode/.test(err.message))).toEqual([]);
    } finally {
      await Promise.all([closeRedis(sub), closeRedis(pub)]);
    }
  });
});

describe('defineScript', () => {
  it('uploads an unknown script once, then runs it by SHA', async () => {
    const redis = createRedis(testRedisUrl(), { name: 'test-script' });
    const key = `${uniquePrefix('script')}k`;
    try {
      const script = defineScript(
        `-- ${randomId()}\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`,
      );
      expect(await script(redis, [key], [2])).toBe(2);
      expect(await script(redis, [key], [3])).toBe(5);
    } finally {
      await redis.del(key);
      await closeRedis(redis);
    }
  });
});

describe('closeRedis', () => {
  it('settles commands queued while the connection waits to reconnect', async () => {
    const redis = createRedis('redis://127.0.0.1:1', {
      name: 'test-reconnecting',
      onError: () => undefined,
      maxRetriesPerRequest: null,
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const pending = redis.get('x').catch((err: unknown) => err);
    await closeRedis(redis);
    expect(redis.status).toBe('end');
    expect(await pending).toBeInstanceOf(Error);
  });
});

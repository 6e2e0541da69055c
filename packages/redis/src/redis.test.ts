import { randomId, testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { describe, expect, it } from 'vitest';
import { closeRedis, createRedis } from './connection.js';
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

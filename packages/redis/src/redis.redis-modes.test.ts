import { REDIS_TOPOLOGIES, randomId, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeRedis, connectionNameOf, createRedis, duplicateRedis } from './connection.js';
import { scanKeys, unlinkKeys } from './multi-key.js';
import { parseRedisUrl } from './target.js';

/** The connection factory and the multi-key helpers on a Redis Cluster and on Sentinel. */
const topologies = redisTopologies({ beforeAll, afterAll });

describe('parseRedisUrl', () => {
  it('keeps what a URL says besides its host: credentials, database, TLS', () => {
    expect(parseRedisUrl('rediss://user:p%40ss@host:6380/3')).toEqual({
      username: 'user',
      password: 'p@ss',
      db: 3,
      tls: {},
    });
    expect(parseRedisUrl('redis://host:6379')).toEqual({});
  });
});

for (const mode of REDIS_TOPOLOGIES) {
  describe(`createRedis on ${mode}`, () => {
    it('connects under its name, and duplicates into the same mode with overrides', async () => {
      const name = `test-modes-${randomId()}`;
      const redis = createRedis(topologies.target(mode), { name });
      const copy = duplicateRedis(redis, { connectionName: `${name}-copy` });
      try {
        expect(redis.isCluster).toBe(mode === 'cluster');
        expect(copy.isCluster).toBe(mode === 'cluster');
        expect(connectionNameOf(copy)).toBe(`${name}-copy`);
        const key = `${uniquePrefix('modes')}k`;
        await redis.set(key, 'v');
        expect(await copy.get(key)).toBe('v');
        expect(await copy.client('GETNAME')).toBe(`${name}-copy`);
      } finally {
        await Promise.all([closeRedis(redis), closeRedis(copy)]);
      }
      expect([redis.status, copy.status]).toEqual(['end', 'end']);
    });

    it('scans and unlinks keys spread over every slot', async () => {
      const redis = createRedis(topologies.target(mode), { name: 'test-modes-keys' });
      const prefix = uniquePrefix('modes-keys');
      const keys = Array.from({ length: 60 }, (_, i) => `${prefix}${i}`);
      try {
        await Promise.all(keys.map((key) => redis.set(key, '1')));
        const found: string[] = [];
        for await (const page of scanKeys(redis, `${prefix}*`)) found.push(...page);
        expect(found.sort()).toEqual([...keys].sort());
        expect(await unlinkKeys(redis, [...keys, `${prefix}absent`])).toBe(60);
        expect(await unlinkKeys(redis, [])).toBe(0);
        const left: string[] = [];
        for await (const page of scanKeys(redis, `${prefix}*`)) left.push(...page);
        expect(left).toEqual([]);
      } finally {
        await closeRedis(redis);
      }
    });
  });
}

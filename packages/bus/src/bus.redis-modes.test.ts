import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import { REDIS_TOPOLOGIES, randomId, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, beforeAll } from 'vitest';
import { describeBusContract } from './bus.contract.js';
import { createRedisBus } from './redis-bus.js';

/** The bus contract on a Redis Cluster (sharded pub/sub) and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });

for (const mode of REDIS_TOPOLOGIES) {
  describeBusContract(`redis ${mode}`, async (count, { onError }) => {
    const target = topologies.target(mode);
    const prefix = uniquePrefix('bus');
    const connections: Redis[] = [];
    const open = (name: string, subscriber = false) => {
      const redis = createRedis(target, {
        name: `test-bus-${name}-${randomId(3)}`,
        onError: () => undefined,
        ...(subscriber ? { shardedSubscriber: true, maxRetriesPerRequest: null } : {}),
      });
      connections.push(redis);
      return redis;
    };
    const nodes = Array.from({ length: count }, () =>
      createRedisBus({ publisher: open('pub'), subscriber: open('sub', true), prefix, onError }),
    );
    const raw = open('raw');
    await Promise.all(
      nodes.map(async (node) => {
        await node.publish('warm-up', null);
        await (await node.subscribe('warm-up', () => undefined)).unsubscribe();
      }),
    );
    return {
      nodes,
      injectRaw: async (channel, payload) => {
        const name = redisKeys(prefix).busChannel(channel);
        await (raw.isCluster ? raw.spublish(name, payload) : raw.publish(name, payload));
      },
      dispose: async () => {
        await Promise.all(nodes.map((node) => node.close()));
        await Promise.all(connections.map((c) => closeRedis(c)));
      },
    };
  });
}

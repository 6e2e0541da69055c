import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { randomId, type TestRedisTarget } from '@agent-backend/testing';
import type { Bus } from '../bus.js';
import { createRedisBus } from '../redis-bus.js';

/**
 * Bus nodes on a test Cluster, each with a publisher and a sharded subscriber connection as
 * `createRedisBus({ url })` opens them, kept in `connections` (the first is a publisher, for raw
 * commands). `close` closes the nodes, then the connections.
 */
export function clusterBuses(target: TestRedisTarget, prefix: string, label: string) {
  const connections: Redis[] = [];
  const open = (name: string, subscriber = false) => {
    const redis = createRedis(target, {
      name: `test-${label}-${name}-${randomId(3)}`,
      onError: () => undefined,
      maxRetriesPerRequest: subscriber ? null : 2,
      ...(subscriber ? { shardedSubscriber: true } : {}),
    });
    connections.push(redis);
    return redis;
  };
  const buses: Bus[] = [];
  return {
    connections,
    bus(): Bus {
      const bus = createRedisBus({ publisher: open('pub'), subscriber: open('sub', true), prefix });
      buses.push(bus);
      return bus;
    },
    async close() {
      await Promise.all(buses.map((bus) => bus.close()));
      await Promise.all(connections.map((c) => closeRedis(c)));
    },
  };
}

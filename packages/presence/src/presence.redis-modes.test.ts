import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { REDIS_TOPOLOGIES, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { describePresenceContract } from './presence.contract.js';
import { createRedisPresence } from './redis-presence.js';

/** The presence contract on a Redis Cluster (hash-tagged keys) and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

for (const mode of REDIS_TOPOLOGIES) {
  describePresenceContract(`redis ${mode}`, async (options) => {
    const redis = createRedis(topologies.target(mode), { name: `test-presence-${mode}` });
    connections.push(redis);
    return createRedisPresence({ redis, prefix: uniquePrefix('presence'), ...options });
  });
}

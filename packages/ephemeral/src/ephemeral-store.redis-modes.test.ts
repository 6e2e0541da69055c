import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { REDIS_TOPOLOGIES, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { describeEphemeralContract } from './ephemeral-store.contract.js';
import { createRedisEphemeralStore } from './redis-ephemeral-store.js';

/** The ephemeral-store contract on a Redis Cluster and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

for (const mode of REDIS_TOPOLOGIES) {
  describeEphemeralContract(`redis ${mode}`, async () => {
    const redis = createRedis(topologies.target(mode), { name: `test-eph-${mode}` });
    connections.push(redis);
    return createRedisEphemeralStore({ redis, prefix: uniquePrefix('eph') });
  });
}

import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { REDIS_TOPOLOGIES, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { describeLimitsContract } from './limits.contract.js';
import { createRedisLimits } from './redis-limits.js';

/** The limits contract on a Redis Cluster and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

for (const mode of REDIS_TOPOLOGIES) {
  describeLimitsContract(`redis ${mode}`, async (rules, lease) => {
    const redis = createRedis(topologies.target(mode), { name: `test-limits-${mode}` });
    connections.push(redis);
    return createRedisLimits({ redis, prefix: uniquePrefix('limits'), rules, ...lease });
  });
}

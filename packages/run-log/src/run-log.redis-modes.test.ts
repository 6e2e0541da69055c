import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { REDIS_TOPOLOGIES, redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { describeRunLogContract } from './run-log.contract.js';
import { createRedisRunLog } from './redis-run-log.js';

/** The run-log contract on a Redis Cluster and on a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll });
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

for (const mode of REDIS_TOPOLOGIES) {
  describeRunLogContract(`redis ${mode}`, async (options) => {
    const prefix = uniquePrefix('runlog');
    const replica = () => {
      const redis = createRedis(topologies.target(mode), { name: `test-runlog-${mode}` });
      connections.push(redis);
      return createRedisRunLog({ redis, prefix, ...options });
    };
    return [replica(), replica()];
  });
}

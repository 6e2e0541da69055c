import { closeRedis, createRedis, redisKeys, type Redis } from '@agent-backend/redis';
import { redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createBullmqJobQueue } from './bullmq-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';

/** The job-queue contract on BullMQ over a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll }, ['sentinel']);
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

describeJobQueueContract('bullmq on redis sentinel', async () => {
  const connection = createRedis(topologies.target('sentinel'), {
    name: 'test-jobs-sentinel',
    maxRetriesPerRequest: null,
  });
  connections.push(connection);
  const prefix = redisKeys(uniquePrefix('jobs'), { cluster: false }).jobs();
  return createBullmqJobQueue({ connection, prefix });
});

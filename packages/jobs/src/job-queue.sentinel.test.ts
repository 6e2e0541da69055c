import { Redis } from 'ioredis';
import { redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createBullmqJobQueue } from './bullmq-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';

/** The job-queue contract on BullMQ over a Sentinel-managed master. */
const topologies = redisTopologies({ beforeAll, afterAll }, ['sentinel']);
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
});

describeJobQueueContract('bullmq on redis sentinel', async () => {
  const { sentinels, name } = topologies.sentinel;
  const connection = new Redis({
    sentinels: sentinels.map((node) => {
      const [host, port] = node.split(':');
      return { host: host!, port: Number(port) };
    }),
    name,
    maxRetriesPerRequest: null,
  });
  connections.push(connection);
  // On Sentinel the prefix is the standalone one: `<base>bull`.
  return createBullmqJobQueue({ connection, prefix: `${uniquePrefix('jobs')}bull` });
});

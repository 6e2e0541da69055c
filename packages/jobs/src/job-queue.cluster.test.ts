import { closeRedis, createRedis, redisKeys, scanKeys, type Redis } from '@agent-backend/redis';
import { redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqJobQueue } from './bullmq-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';

/**
 * The job-queue contract on BullMQ over a Redis Cluster: a hash-tagged prefix, so every key of
 * every queue shares a slot (the Sentinel run is job-queue.sentinel.test.ts).
 */
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
});

describeJobQueueContract('bullmq on redis cluster', async () => {
  const connection = createRedis(topologies.target('cluster'), {
    name: 'test-jobs-cluster',
    maxRetriesPerRequest: null,
  });
  connections.push(connection);
  const prefix = redisKeys(uniquePrefix('jobs'), { cluster: true }).jobs();
  return createBullmqJobQueue({ connection, prefix });
});

describe('bullmq on redis cluster', () => {
  it('keeps every key of every queue in the slot of the prefix tag', async () => {
    const connection = createRedis(topologies.target('cluster'), {
      name: 'test-jobs-slots',
      maxRetriesPerRequest: null,
    });
    connections.push(connection);
    const base = uniquePrefix('jobs');
    const prefix = redisKeys(base, { cluster: true }).jobs();
    const queue = await createBullmqJobQueue({ connection, prefix });
    try {
      await queue.add('a', { n: 1 });
      await queue.add('b', { n: 2 });
      const stored: string[] = [];
      for await (const page of scanKeys(connection, `${base}*`)) stored.push(...page);
      const slots = await Promise.all(
        stored.map(async (key) => Number(await connection.call('CLUSTER', 'KEYSLOT', key))),
      );
      expect(stored.length).toBeGreaterThanOrEqual(4);
      expect(stored.every((key) => key.startsWith(`${base}{`))).toBe(true);
      expect(new Set(slots).size).toBe(1);
    } finally {
      await queue.close();
    }
  });
});

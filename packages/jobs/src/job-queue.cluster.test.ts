import { Cluster } from 'ioredis';
import { redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBullmqJobQueue } from './bullmq-job-queue.js';
import { describeJobQueueContract } from './job-queue.contract.js';

/**
 * The job-queue contract on BullMQ over a Redis Cluster: a hash-tagged prefix (as
 * `redisKeys(prefix, { cluster: true }).jobs()` makes it), so every key of every queue shares a
 * slot (the Sentinel run is job-queue.sentinel.test.ts).
 */
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);
const connections: Cluster[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
});

/** A Cluster client as BullMQ needs it (no retry limit on blocking commands). */
function connect(): Cluster {
  const cluster = new Cluster(
    topologies.cluster.nodes.map((node) => {
      const [host, port] = node.split(':');
      return { host: host!, port: Number(port) };
    }),
    { redisOptions: { maxRetriesPerRequest: null } },
  );
  connections.push(cluster);
  return cluster;
}

/** `<base>{<base>bull}`, the tagged BullMQ prefix of a deployment on a Cluster. */
const taggedPrefix = (base: string) => `${base}{${base}bull}`;

describeJobQueueContract('bullmq on redis cluster', async () =>
  createBullmqJobQueue({ connection: connect(), prefix: taggedPrefix(uniquePrefix('jobs')) }),
);

describe('bullmq on redis cluster', () => {
  it('keeps every key of every queue in the slot of the prefix tag', async () => {
    const connection = connect();
    const base = uniquePrefix('jobs');
    const queue = await createBullmqJobQueue({ connection, prefix: taggedPrefix(base) });
    try {
      await queue.add('a', { n: 1 });
      await queue.add('b', { n: 2 });
      const stored: string[] = [];
      for (const node of connection.nodes('master')) {
        stored.push(...(await node.keys(`${base}*`)));
      }
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

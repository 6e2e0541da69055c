import { createBullmqJobQueue } from '@agent-backend/jobs';
import { closeRedis, createRedis } from '@agent-backend/redis';
import {
  clusterKeySlot,
  replicasCaughtUp,
  slotOwner,
  startTestRedisCluster,
  uniquePrefix,
  type TestRedisCluster,
} from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * BullMQ on a Redis Cluster through the service's own connection (`createRedis`, cluster mode),
 * the master serving the queues' slot killed (SIGKILL) while four queues' workers wait on it.
 * BullMQ resets a blocking connection whose read outlived its deadline; during the failover that
 * reset used to wait forever (ioredis's ready check failing mid-`connect()`), and the workers
 * took no job again: found by tests/faults/redis-cluster-failover.test.ts.
 */
describe('bullmq on redis cluster: the master of the queues slot killed', () => {
  let redis: TestRedisCluster;
  beforeAll(async () => {
    redis = await startTestRedisCluster();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('runs the jobs added before (delayed), during and after the failover', async () => {
    const base = uniquePrefix('jobs');
    const prefix = `${base}{${base}bull}`;
    const connection = createRedis(
      { mode: 'cluster', url: 'redis://127.0.0.1', nodes: redis.nodes },
      { name: 'failover-test', maxRetriesPerRequest: null, onError: () => undefined },
    );
    const queue = await createBullmqJobQueue({ connection, prefix, onError: () => undefined });
    const queues = ['a', 'b', 'c', 'd'];
    const ran: string[] = [];
    try {
      for (const name of queues) {
        await queue.process(
          name,
          async (data) => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            ran.push((data as { id: string }).id);
          },
          { concurrency: 2 },
        );
      }
      await queue.add('a', { id: 'first' });
      await expect.poll(() => ran, { timeout: 10_000 }).toContain('first');

      // Due while the slot has no master (promotion takes about 4 s here).
      for (const name of queues)
        await queue.add(name, { id: `${name}-delayed` }, { delayMs: 2_000 });
      const ports = redis.processes.map((p) => p.port);
      const slot = await clusterKeySlot(ports[0]!, `${prefix}:a:id`);
      const victimPort = (await slotOwner(ports[0]!, slot))!.port;
      const survivor = ports.find((port) => port !== victimPort)!;
      await expect.poll(() => replicasCaughtUp(victimPort), { timeout: 10_000 }).toBe(true);

      await redis.processes.find((p) => p.port === victimPort)!.kill();
      // Accepted once the replica serves the slot (ioredis retries on CLUSTERDOWN meanwhile).
      const during = Promise.all(queues.map((name) => queue.add(name, { id: `${name}-during` })));
      await expect
        .poll(async () => (await slotOwner(survivor, slot).catch(() => undefined))?.port, {
          timeout: 30_000,
          interval: 100,
        })
        .toSatisfy((port) => port !== undefined && port !== victimPort);
      await during;
      for (const name of queues) await queue.add(name, { id: `${name}-after` });

      const expected = queues.flatMap((name) => [
        `${name}-delayed`,
        `${name}-during`,
        `${name}-after`,
      ]);
      await expect
        .poll(() => expected.filter((id) => !ran.includes(id)), { timeout: 30_000 })
        .toEqual([]);
    } finally {
      await queue.close();
      await closeRedis(connection);
    }
  }, 120_000);
});

import { redisKeys } from '@agent-backend/redis';
import { redisTopologies, uniquePrefix } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clusterBuses } from './testing/cluster-buses.js';

/**
 * Sharded pub/sub through a Cluster failover: the master owning a channel's slot dies, the
 * cluster promotes its replica, and the subscriptions move there without the bus doing anything.
 */
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);

describe('redis bus on a cluster failover', () => {
  it("resubscribes a channel on the promoted replica of its slot's master", async () => {
    const prefix = uniquePrefix('bus-failover');
    const buses = clusterBuses(topologies.target('cluster'), prefix, 'bus-failover');
    const [a, b] = [buses.bus(), buses.bus()];
    try {
      const got: unknown[] = [];
      await b.subscribe('events', (message) => void got.push(message));
      expect(await a.publish('events', 'before')).toBe(1);
      await vi.waitFor(() => expect(got).toEqual(['before']));

      const raw = buses.connections[0]!;
      const channel = redisKeys(prefix).busChannel('events');
      const slot = Number(await raw.call('CLUSTER', 'KEYSLOT', channel));
      const masterPort = async (): Promise<number> => {
        const shards = String(await raw.call('CLUSTER', 'NODES'))
          .trim()
          .split('\n');
        for (const line of shards) {
          const [, address, flags, , , , , state, ...ranges] = line.split(' ');
          if (!flags!.includes('master') || flags!.includes('fail') || state !== 'connected')
            continue;
          const owns = ranges.some((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return slot >= from! && slot <= to!;
          });
          if (owns) return Number(address!.split('@')[0]!.split(':')[1]);
        }
        return 0;
      };
      const before = await masterPort();
      const dying = topologies.cluster.processes.find((p) => p.port === before)!;
      await dying.kill();

      // Until the replica is promoted, publishes to that slot fail or reach nobody.
      let n = 0;
      await vi.waitFor(
        async () => {
          const label = `after-${++n}`;
          expect(await a.publish('events', label)).toBe(1);
          await vi.waitFor(() => expect(got).toContain(label), { timeout: 1_000 });
        },
        { timeout: 25_000, interval: 250 },
      );
      const after = await masterPort();
      expect(after).not.toBe(before);
      expect(after).toBeGreaterThan(0);
    } finally {
      await buses.close();
    }
  });
});

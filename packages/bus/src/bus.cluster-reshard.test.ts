import { redisKeys } from '@agent-backend/redis';
import {
  clusterKeySlot,
  clusterMasters,
  migrateSlots,
  randomId,
  redisTopologies,
  slotOwner,
  uniquePrefix,
} from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clusterBuses } from './testing/cluster-buses.js';

/**
 * Sharded pub/sub through a resharding: the slot of a subscribed channel moves to another master
 * (as `redis-cli --cluster reshard` moves it), the old master drops the subscription with a
 * `sunsubscribe` push, and the subscriber must subscribe again on the new master.
 */
/** Rounds of moving every subscribed channel's slot to the next master. */
const ROUNDS = 6;
/** User channels subscribed besides the request channel and the reply inbox. */
const USERS = 12;
const topologies = redisTopologies({ beforeAll, afterAll }, ['cluster']);

describe('redis bus on a cluster resharding', () => {
  it('keeps receiving on user channels, a request channel and a reply inbox whose slots moved', async () => {
    const { nodes, processes } = topologies.cluster;
    const port = processes[0]!.port;
    const prefix = uniquePrefix('bus-reshard');
    const keys = redisKeys(prefix);
    const buses = clusterBuses(topologies.target('cluster'), prefix, 'bus-reshard');
    const [a, b] = [buses.bus(), buses.bus()];
    const users = Array.from({ length: USERS }, (_, i) => `user:${i}`);
    /** Whether every user channel and the request/reply path deliver now. */
    const allDeliver = async (label: string) => {
      await Promise.all(
        users.map(async (user) => {
          const tag = `${label}:${user}`;
          expect(await a.publish(user, tag)).toBe(1);
          await vi.waitFor(() => expect(got.get(user)).toContain(tag), { timeout: 1_000 });
        }),
      );
      expect(await a.request('rpc', label, { timeoutMs: 1_000 })).toEqual({ echo: label });
    };
    const got = new Map<string, unknown[]>(users.map((user) => [user, []]));
    try {
      for (const user of users) await b.subscribe(user, (m) => void got.get(user)!.push(m));
      await b.respond('rpc', (message) => ({ echo: message }));
      await allDeliver('before');

      // Each round, every slot moves to one master, one right after the other (as `redis-cli
      // --cluster reshard` moves them): each old master drops the subscriptions of a
      // slot with a `sunsubscribe` push, and the pushes arrive while the slot refresh that the
      // first one started is still under way.
      const channels = [
        ...users.map((user) => keys.busChannel(user)),
        keys.busRequests('rpc'),
        keys.busInbox(a.nodeId),
      ];
      const slots = [...new Set(await Promise.all(channels.map((c) => clusterKeySlot(port, c))))];
      for (let round = 1; round <= ROUNDS; round++) {
        const masters = await clusterMasters(port);
        const to = masters[round % masters.length]!;
        const moves = slots
          .filter((slot) => !to.ranges.some(([x, y]) => slot >= x && slot <= y))
          .map((slot) => ({ slot, to }));
        for (const { slot } of moves) await migrateSlots(port, [slot], to);
        // Every node, replicas included (they learn it by gossip), agrees on the new owners.
        await vi.waitFor(async () => {
          for (const { slot, to } of moves) {
            for (const node of nodes) {
              expect((await slotOwner(Number(node.split(':')[1]), slot))?.id).toBe(to.id);
            }
          }
        }, 10_000);
        await vi.waitFor(() => allDeliver(`round-${round}-${randomId(3)}`), {
          timeout: 10_000,
          interval: 250,
        });
      }
    } finally {
      await buses.close();
    }
  });
});

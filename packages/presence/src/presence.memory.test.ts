import { describe, expect, it } from 'vitest';
import { createMemoryPresence } from './memory-presence.js';
import { describePresenceContract, node } from './presence.contract.js';

describePresenceContract('memory', async (options) => createMemoryPresence(options));

describe('memory presence', () => {
  it('bounds ghosts by the replica TTL on the injected clock', async () => {
    let now = 10_000;
    const p = createMemoryPresence({ nodeTtlMs: 1_000, replicaTtlMs: 300, now: () => now });
    try {
      await p.heartbeatReplica('r1');
      await p.upsertNode(node('n1'));
      now += 299;
      expect(await p.getNode('u1', 'n1')).not.toBeNull();
      now += 1;
      expect(await p.getNode('u1', 'n1')).toBeNull();
      await p.heartbeatReplica('r1');
      await p.upsertNode(node('n2'));
      await p.heartbeatReplica('r1');
      now += 250;
      await p.heartbeatReplica('r1');
      now += 250;
      await p.heartbeatReplica('r1');
      now += 500;
      expect(await p.getNode('u1', 'n2')).toBeNull();
    } finally {
      await p.close();
    }
  });
});

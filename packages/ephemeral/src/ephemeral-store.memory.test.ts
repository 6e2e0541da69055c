import { describe, expect, it } from 'vitest';
import { describeEphemeralContract } from './ephemeral-store.contract.js';
import { createMemoryEphemeralStore } from './memory-ephemeral-store.js';

describeEphemeralContract('memory', async () => createMemoryEphemeralStore());

describe('memory ephemeral store', () => {
  it('expires keys by the injected clock', async () => {
    let now = 1_000;
    const store = createMemoryEphemeralStore({ now: () => now });
    try {
      await store.set('k', 'v', { ttlMs: 100 });
      await store.increment('n', { ttlMs: 100 });
      now += 60;
      expect(await store.ttl('k')).toBe(40);
      expect(await store.increment('n', { ttlMs: 100 })).toBe(2);
      now += 40;
      expect(await store.get('k')).toBeNull();
      expect(await store.increment('n', { ttlMs: 100 })).toBe(1);
    } finally {
      await store.close();
    }
  });
});

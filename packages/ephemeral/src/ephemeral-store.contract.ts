/**
 * The behaviour every ephemeral store adapter must share. Adapter-only checks live in
 * `ephemeral-store.<adapter>.test.ts`. TTLs are short and expiry is awaited by polling.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EphemeralStore } from './ephemeral-store.js';
import { EphemeralClosedError, EphemeralNotIntegerError } from './errors.js';

/** Creates a store with an empty namespace; the suite closes it after each test. */
export type MakeEphemeralStore = () => Promise<EphemeralStore>;

const gone = { timeout: 5_000, interval: 10 };

export function describeEphemeralContract(name: string, makeStore: MakeEphemeralStore): void {
  describe(`ephemeral store contract: ${name}`, () => {
    let store: EphemeralStore;
    const open: EphemeralStore[] = [];
    const make = async () => {
      const made = await makeStore();
      open.push(made);
      return made;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });

    it('sets, overwrites and gets string values', async () => {
      store = await make();
      expect(await store.get('k')).toBeNull();
      expect(await store.set('k', 'v1')).toBe(true);
      expect(await store.set('k', 'ü 🔑 {"json":1}')).toBe(true);
      expect(await store.get('k')).toBe('ü 🔑 {"json":1}');
      expect(await store.set('empty', '')).toBe(true);
      expect(await store.get('empty')).toBe('');
    });

    it('writes with ifAbsent only when the key does not exist', async () => {
      store = await make();
      expect(await store.set('dedup', 'first', { ifAbsent: true, ttlMs: 10_000 })).toBe(true);
      expect(await store.set('dedup', 'second', { ifAbsent: true })).toBe(false);
      expect(await store.get('dedup')).toBe('first');
      await store.delete('dedup');
      expect(await store.set('dedup', 'third', { ifAbsent: true })).toBe(true);
    });

    it('lets only one of many concurrent ifAbsent writers win', async () => {
      store = await make();
      const wins = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.set('race', `w${i}`, { ifAbsent: true })),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
    });

    it('expires a key after its TTL for every reader, then allows ifAbsent again', async () => {
      store = await make();
      await store.set('short', 'v', { ttlMs: 500 });
      const ttl = await store.ttl('short');
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(500);
      await vi.waitFor(async () => expect(await store.get('short')).toBeNull(), gone);
      expect(await store.ttl('short')).toBeNull();
      expect(await store.take('short')).toBeNull();
      expect(await store.delete('short')).toBe(false);
      expect(await store.set('short', 'again', { ifAbsent: true })).toBe(true);
    });

    it('reports null TTL for missing keys and keys without expiry; set without TTL clears it', async () => {
      store = await make();
      expect(await store.ttl('missing')).toBeNull();
      await store.set('forever', 'v', { ttlMs: 10_000 });
      await store.set('forever', 'v');
      expect(await store.ttl('forever')).toBeNull();
    });

    it('takes a value exactly once, even with concurrent callers', async () => {
      store = await make();
      await store.set('approval', 'payload', { ttlMs: 10_000 });
      const results = await Promise.all(Array.from({ length: 20 }, () => store.take('approval')));
      expect(results.filter((r) => r !== null)).toEqual(['payload']);
      expect(await store.get('approval')).toBeNull();
    });

    it('deletes and says whether the key existed', async () => {
      store = await make();
      await store.set('d', 'v');
      expect(await store.delete('d')).toBe(true);
      expect(await store.delete('d')).toBe(false);
      expect(await store.get('d')).toBeNull();
    });

    it('increments atomically in a fixed window that later increments do not extend', async () => {
      store = await make();
      expect(await store.increment('rate', { ttlMs: 10_000 })).toBe(1);
      expect(await store.increment('rate', { ttlMs: 10_000, by: 5 })).toBe(6);
      const counts = await Promise.all(
        Array.from({ length: 30 }, () => store.increment('rate', { ttlMs: 10_000 })),
      );
      expect(new Set(counts).size).toBe(30);
      expect(await store.get('rate')).toBe('36');

      expect(await store.increment('window', { ttlMs: 500 })).toBe(1);
      const first = await store.ttl('window');
      await new Promise((resolve) => setTimeout(resolve, 30));
      await store.increment('window', { ttlMs: 60_000 });
      expect(await store.ttl('window')).toBeLessThanOrEqual(first!);
      await vi.waitFor(async () => expect(await store.get('window')).toBeNull(), gone);
      expect(await store.increment('window', { ttlMs: 200 })).toBe(1);
    });

    it('refuses to increment a value that is not an integer', async () => {
      store = await make();
      await store.set('text', 'hello');
      await expect(store.increment('text', { ttlMs: 1_000 })).rejects.toBeInstanceOf(
        EphemeralNotIntegerError,
      );
      await expect(store.increment('n', { ttlMs: 1_000, by: 1.5 })).rejects.toBeInstanceOf(
        RangeError,
      );
    });

    it('rejects TTLs that are not positive', async () => {
      store = await make();
      await expect(store.set('k', 'v', { ttlMs: 0 })).rejects.toBeInstanceOf(RangeError);
      await expect(store.increment('k', { ttlMs: -1 })).rejects.toBeInstanceOf(RangeError);
    });

    it('lists the live keys of a prefix, taken literally', async () => {
      store = await make();
      await store.set('lease:u%3A1:s1', 'r1');
      await store.set('lease:u%3A1:s2', 'r2', { ttlMs: 10_000 });
      await store.set('lease:u%3A1:gone', 'r3', { ttlMs: 1 });
      await store.set('lease:u%3A12:s1', 'other user');
      await store.set('lease:*:s1', 'a glob character in the key');
      await vi.waitFor(async () => expect(await store.get('lease:u%3A1:gone')).toBeNull(), gone);
      expect((await store.keysWithPrefix('lease:u%3A1:')).sort()).toEqual([
        'lease:u%3A1:s1',
        'lease:u%3A1:s2',
      ]);
      expect(await store.keysWithPrefix('lease:*:')).toEqual(['lease:*:s1']);
      expect(await store.keysWithPrefix('nothing:')).toEqual([]);
    });

    it('rejects every method after close, and close is idempotent', async () => {
      store = await make();
      await Promise.all([store.close(), store.close()]);
      await store.close();
      const closed = EphemeralClosedError;
      await expect(store.set('k', 'v')).rejects.toBeInstanceOf(closed);
      await expect(store.get('k')).rejects.toBeInstanceOf(closed);
      await expect(store.delete('k')).rejects.toBeInstanceOf(closed);
      await expect(store.take('k')).rejects.toBeInstanceOf(closed);
      await expect(store.increment('k', { ttlMs: 1 })).rejects.toBeInstanceOf(closed);
      await expect(store.ttl('k')).rejects.toBeInstanceOf(closed);
      await expect(store.keysWithPrefix('k')).rejects.toBeInstanceOf(closed);
    });
  });
}

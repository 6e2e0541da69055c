import { describe, expect, it } from 'vitest';
import { LIVE_REPLICAS_MAX_AGE_MS, LiveReplicasCache } from './live-replicas-cache.js';

/** The cache with a reader that counts its reads and answers `ids` at server time 1,000,000. */
function counted(ids: string[]) {
  const counter = { reads: 0 };
  const cache = new LiveReplicasCache(async () => {
    counter.reads++;
    return { now: 1_000_000, ids };
  }, 10_000);
  return { cache, counter };
}

describe('LiveReplicasCache', () => {
  it('serves the scripts that ask again in one turn with one read, sent after they asked', async () => {
    const { cache, counter } = counted(['r1']);
    await cache.current();
    expect(counter.reads).toBe(1);
    // A gateway died: every script of its users' entries asks again in the same turn.
    const lists = await Promise.all(Array.from({ length: 200 }, () => cache.refresh()));
    expect(counter.reads).toBe(2);
    expect(lists.every((list) => list.ids.has('r1') && list.since === 1_000_000 - 10_000)).toBe(
      true,
    );
    // A later ask is not served by that read: it may have seen a replica newer than it.
    await cache.refresh();
    expect(counter.reads).toBe(3);
  });

  it('reuses a list for its age, then reads again; keeps its own beat and removal', async () => {
    const { cache, counter } = counted(['r1']);
    await cache.current();
    await cache.current();
    expect(counter.reads).toBe(1);
    cache.beat('r2');
    cache.removed('r1');
    expect([...(await cache.current()).ids]).toEqual(['r2']);
    await new Promise((resolve) => setTimeout(resolve, LIVE_REPLICAS_MAX_AGE_MS + 20));
    expect([...(await cache.current()).ids]).toEqual(['r1']);
    expect(counter.reads).toBe(2);
  });

  it('keeps its own beat made while a list read elsewhere was in flight', async () => {
    const { cache } = counted([]);
    const sentAt = performance.now();
    cache.beat('mine'); // the beat's answer came after that read was sent
    cache.store(sentAt, 1_000_000, ['other']);
    expect([...(await cache.current()).ids].sort()).toEqual(['mine', 'other']);
    // A read sent after the beat saw it (or its absence): the list is taken as it is.
    await new Promise((resolve) => setTimeout(resolve, 2));
    cache.store(performance.now(), 1_000_100, ['other']);
    expect([...(await cache.current()).ids]).toEqual(['other']);
  });
});

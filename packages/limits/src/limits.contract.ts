/**
 * The behaviour every limits adapter must share. Adapter-only checks live in
 * `limits.<adapter>.test.ts`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LimitsClosedError, type Limits, type RateRule, type SlotLeaseOptions } from './limits.js';
import { TokenBudgets } from './token-budget.js';

/** Creates limits with an empty namespace, these rules and slot lease; the suite closes them. */
export type MakeLimits = (
  rules: Record<string, RateRule>,
  lease?: SlotLeaseOptions,
) => Promise<Limits>;

export function describeLimitsContract(name: string, makeLimits: MakeLimits): void {
  describe(`limits contract: ${name}`, () => {
    const open: Limits[] = [];
    const make = async (rules: Record<string, RateRule>, lease?: SlotLeaseOptions) => {
      const made = await makeLimits(rules, lease);
      open.push(made);
      return made;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close()));
    });

    it('allows the points of a window, then refuses with the time to the reset', async () => {
      const limits = await make({ invoke: { points: 3, windowMs: 60_000 } });
      const decisions = [];
      for (let i = 0; i < 5; i++) decisions.push(await limits.consume('invoke', 'u1'));
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
      expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
      expect(decisions.every((d) => d.limit === 3)).toBe(true);
      const refused = decisions[4]!;
      expect(refused.resetMs).toBeGreaterThan(0);
      expect(refused.resetMs).toBeLessThanOrEqual(60_000);
    });

    it('counts each key and each limit apart', async () => {
      const limits = await make({
        invoke: { points: 1, windowMs: 60_000 },
        search: { points: 1, windowMs: 60_000 },
      });
      expect((await limits.consume('invoke', 'u1')).allowed).toBe(true);
      expect((await limits.consume('invoke', 'u1')).allowed).toBe(false);
      expect((await limits.consume('invoke', 'u2')).allowed).toBe(true);
      expect((await limits.consume('search', 'u1')).allowed).toBe(true);
    });

    it('never refuses a limit with 0 points (off), and rejects unknown names', async () => {
      const limits = await make({ off: { points: 0, windowMs: 60_000 } });
      for (let i = 0; i < 5; i++) expect((await limits.consume('off', 'u')).allowed).toBe(true);
      await expect(limits.consume('nope', 'u')).rejects.toThrow(RangeError);
    });

    it('starts a new window after the old one ends', async () => {
      const limits = await make({ burst: { points: 1, windowMs: 1_000 } });
      expect((await limits.consume('burst', 'u')).allowed).toBe(true);
      const refused = await limits.consume('burst', 'u');
      expect(refused.allowed).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, refused.resetMs + 50));
      expect((await limits.consume('burst', 'u')).allowed).toBe(true);
    });

    it('grants run slots up to the maximum per user, and frees one on release', async () => {
      const limits = await make({});
      const a = await limits.acquireSlot('runs', 'u1', 'r1', 2);
      const b = await limits.acquireSlot('runs', 'u1', 'r2', 2);
      expect(a.granted && b.granted).toBe(true);
      expect(await limits.acquireSlot('runs', 'u1', 'r3', 2)).toEqual({ granted: false, held: 2 });
      expect((await limits.acquireSlot('runs', 'u2', 'r4', 2)).granted).toBe(true);
      if (a.granted) await a.release();
      expect((await limits.acquireSlot('runs', 'u1', 'r3', 2)).granted).toBe(true);
    });

    it('treats taking the same run again as the same slot', async () => {
      const limits = await make({});
      expect((await limits.acquireSlot('runs', 'u', 'r1', 1)).granted).toBe(true);
      expect((await limits.acquireSlot('runs', 'u', 'r1', 1)).granted).toBe(true);
      expect((await limits.acquireSlot('runs', 'u', 'r2', 1)).granted).toBe(false);
    });

    it('counts the slots of each pool apart', async () => {
      const limits = await make({});
      expect((await limits.acquireSlot('runs', 'u', 'a', 1)).granted).toBe(true);
      expect((await limits.acquireSlot('streams', 'u', 'a', 1)).granted).toBe(true);
      expect((await limits.acquireSlot('node_connections', 'u', 'b', 1)).granted).toBe(true);
      expect(await limits.acquireSlot('streams', 'u', 'c', 1)).toEqual({ granted: false, held: 1 });
    });

    it('adds to a counter, reads it with 0, and forgets it after its time', async () => {
      const limits = await make({});
      expect(await limits.addToCounter('tokens:u:d', 0, 60_000)).toBe(0);
      expect(await limits.addToCounter('tokens:u:d', 120, 60_000)).toBe(120);
      expect(await limits.addToCounter('tokens:u:d', 30, 60_000)).toBe(150);
      expect(await limits.addToCounter('tokens:u:d', 0, 60_000)).toBe(150);
      expect(await limits.addToCounter('tokens:v:d', 0, 60_000)).toBe(0);
      expect(await limits.addToCounter('short', 5, 100)).toBe(5);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await limits.addToCounter('short', 0, 100)).toBe(0);
    });

    it('keeps a daily token budget per user', async () => {
      const limits = await make({});
      const now = Date.parse('2026-11-27T23:00:00Z');
      const budgets = new TokenBudgets(limits, 1_000, () => now);
      expect(await budgets.status('u')).toEqual({
        day: '2026-11-27',
        limit: 1_000,
        used: 0,
        remaining: 1_000,
        resetMs: 3_600_000,
      });
      expect(await budgets.spend('u', 700)).toMatchObject({ used: 700, remaining: 300 });
      expect(await budgets.spend('u', 700)).toMatchObject({ used: 1_400, remaining: 0 });
      expect(await budgets.status('other')).toMatchObject({ used: 0, remaining: 1_000 });
      const nextDay = new TokenBudgets(limits, 1_000, () => now + 3_600_000);
      expect(await nextDay.status('u')).toMatchObject({ day: '2026-11-28', used: 0 });
      expect(await new TokenBudgets(limits, 0).spend('u', 5)).toBeNull();
    });

    it('forgets one user: their rate points, slots and token counters, nobody else’s', async () => {
      const limits = await make({ invoke: { points: 1, windowMs: 60_000 } });
      expect((await limits.consume('invoke', 'u1')).allowed).toBe(true);
      expect((await limits.consume('invoke', 'u2')).allowed).toBe(true);
      const slot = await limits.acquireSlot('runs', 'u1', 'run-1', 1);
      expect(slot.granted).toBe(true);
      await limits.addToCounter('tokens:u1:2026-11-27', 10, 60_000);
      await limits.addToCounter('tokens:u2:2026-11-27', 10, 60_000);
      expect(await limits.forgetUser('u1')).toBe(3);
      expect((await limits.consume('invoke', 'u1')).allowed).toBe(true);
      expect((await limits.consume('invoke', 'u2')).allowed).toBe(false);
      expect((await limits.acquireSlot('runs', 'u1', 'run-2', 1)).granted).toBe(true);
      expect(await limits.addToCounter('tokens:u1:2026-11-27', 0, 60_000)).toBe(0);
      expect(await limits.addToCounter('tokens:u2:2026-11-27', 0, 60_000)).toBe(10);
      if (slot.granted) await slot.release();
      expect(await limits.forgetUser('nobody')).toBe(0);
    });

    /** A lease long next to its renewals, so a loaded machine does not miss enough of them. */
    const LEASE = { leaseMs: 1_500, renewEveryMs: 100 };
    const waitLong = { timeout: 10_000, interval: 50 };
    /** Resolves once `holder` of `userId` can be taken: a slot left when it was, freed. */
    const freed = (limits: Limits, userId: string, holder: string) =>
      vi.waitFor(async () => {
        expect((await limits.acquireSlot('runs', userId, holder, 1)).granted).toBe(true);
      }, waitLong);

    it('keeps a slot left by its holder for one lease, or for whoever takes it again under the same id', async () => {
      const limits = await make({}, LEASE);
      const left = await limits.acquireSlot('runs', 'u', 'run:1', 1);
      if (!left.granted) throw new Error('not granted');
      left.leave();
      left.leave(); // twice: still one lease, and nothing left behind to free it later
      // Still held: another holder is refused, the same holder (the run's next process) is not.
      expect(await limits.acquireSlot('runs', 'u', 'run:2', 1)).toEqual({
        granted: false,
        held: 1,
      });
      const taken = await limits.acquireSlot('runs', 'u', 'run:1', 1);
      if (!taken.granted) throw new Error('not granted');
      // A slot of another user left now: once it is free, a lease has passed.
      const clock = await limits.acquireSlot('runs', 'clock', 'run:c', 1);
      if (clock.granted) clock.leave();
      await freed(limits, 'clock', 'run:d');
      // Taken again, it is renewed past the first lease; released, it is free at once.
      expect((await limits.acquireSlot('runs', 'u', 'run:2', 1)).granted).toBe(false);
      await taken.release();
      expect((await limits.acquireSlot('runs', 'u', 'run:2', 1)).granted).toBe(true);
      // Left and never taken again: free once its lease ran out.
      const other = await limits.acquireSlot('runs', 'v', 'run:3', 1);
      if (other.granted) other.leave();
      expect((await limits.acquireSlot('runs', 'v', 'run:4', 1)).granted).toBe(false);
      await freed(limits, 'v', 'run:4');
    });

    it('leaves a slot taken again under the same id to its new taker, whatever the old decision does later', async () => {
      const limits = await make({}, LEASE);
      // The run's next process took the slot before its first holder let go (one process).
      const first = await limits.acquireSlot('runs', 'u', 'run:1', 1);
      const next = await limits.acquireSlot('runs', 'u', 'run:1', 1);
      if (!first.granted || !next.granted) throw new Error('not granted');
      const clock = await limits.acquireSlot('runs', 'clock', 'run:c', 1);
      first.leave();
      if (clock.granted) clock.leave();
      await freed(limits, 'clock', 'run:d');
      // A lease after the old decision left: still held (renewed by the new taker).
      expect(await limits.acquireSlot('runs', 'u', 'run:2', 1)).toEqual({
        granted: false,
        held: 1,
      });
      // The old decision's release frees nothing either; the new taker's does.
      await first.release();
      expect((await limits.acquireSlot('runs', 'u', 'run:2', 1)).granted).toBe(false);
      await next.release();
      expect((await limits.acquireSlot('runs', 'u', 'run:2', 1)).granted).toBe(true);
    });

    it('frees a left slot at once when its holder releases it after all', async () => {
      const limits = await make({}, LEASE);
      const slot = await limits.acquireSlot('runs', 'u', 'run:1', 1);
      if (!slot.granted) throw new Error('not granted');
      slot.leave();
      await slot.release();
      expect((await limits.acquireSlot('runs', 'u', 'run:2', 1)).granted).toBe(true);
    });

    it('rejects every call after close()', async () => {
      const limits = await make({ invoke: { points: 1, windowMs: 60_000 } });
      await limits.close();
      await expect(limits.consume('invoke', 'u')).rejects.toThrow(LimitsClosedError);
      await expect(limits.acquireSlot('runs', 'u', 'r', 1)).rejects.toThrow(LimitsClosedError);
      await expect(limits.addToCounter('c', 1, 1_000)).rejects.toThrow(LimitsClosedError);
    });
  });
}

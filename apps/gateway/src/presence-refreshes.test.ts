import { describe, expect, it } from 'vitest';
import { PresenceRefreshes } from './presence-refreshes.js';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The refreshes a replica's connections ask for in turn go out together, once each. */
describe('PresenceRefreshes', () => {
  it('runs the refreshes asked for within one flush period together, each once', async () => {
    const refreshes = new PresenceRefreshes(50);
    const turns: Array<{ name: string; at: number }> = [];
    let turn = 0;
    const conn = (name: string) => ({ refreshNow: () => turns.push({ name, at: turn }) });
    const [a, b, c] = [conn('a'), conn('b'), conn('c')];
    refreshes.add(a);
    await tick(5);
    turn++;
    refreshes.add(b);
    refreshes.add(a);
    await tick(5);
    refreshes.add(c);
    refreshes.delete(c); // its connection closed
    expect(turns).toEqual([]);
    expect(refreshes.size).toBe(2);
    await tick(80);
    // One loop turn (nothing advanced `turn` in between), a and b once each, c not at all.
    expect(turns.map((t) => t.name)).toEqual(['a', 'b']);
    expect(new Set(turns.map((t) => t.at)).size).toBe(1);
    expect(refreshes.size).toBe(0);
    refreshes.stop();
  });

  it('splits a burst over loop turns, 500 a turn', async () => {
    const refreshes = new PresenceRefreshes(10);
    let turn = 0;
    const byTurn = new Map<number, number>();
    const interval = setInterval(() => turn++, 0);
    for (let i = 0; i < 1_200; i++)
      refreshes.add({ refreshNow: () => byTurn.set(turn, (byTurn.get(turn) ?? 0) + 1) });
    await tick(100);
    clearInterval(interval);
    expect([...byTurn.values()].reduce((sum, n) => sum + n, 0)).toBe(1_200);
    expect(Math.max(...byTurn.values())).toBeLessThanOrEqual(500);
    refreshes.stop();
  });

  it('takes nothing after stop', async () => {
    const refreshes = new PresenceRefreshes(10);
    let ran = 0;
    refreshes.add({ refreshNow: () => ran++ });
    refreshes.stop();
    refreshes.add({ refreshNow: () => ran++ });
    await tick(40);
    expect(ran).toBe(0);
  });
});

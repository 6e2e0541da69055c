import { getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { collectStartGarbage } from './start-garbage.js';

describe('collectStartGarbage', () => {
  it('frees garbage an idle process would keep, and leaves no gc exposed', async () => {
    // Start-up's garbage: objects reachable while modules load, unreachable once they did.
    let held: Array<{ n: number; s: string }> | undefined = Array.from(
      { length: 300_000 },
      (_, n) => ({
        n,
        s: `entry ${n}`,
      }),
    );
    const withGarbage = getHeapStatistics().used_heap_size;
    expect(held.length).toBe(300_000);
    held = undefined;
    await collectStartGarbage();
    const after = getHeapStatistics().used_heap_size;
    // 300,000 objects and strings are well over 10 MB.
    expect(withGarbage - after).toBeGreaterThan(10 * 2 ** 20);
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});

import { describe, expect, it } from 'vitest';
import { Semaphore, type Release } from './semaphore.js';

const live = () => new AbortController().signal;
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Semaphore', () => {
  it('admits up to its capacity and the next waiter when a permit is given back', async () => {
    const semaphore = new Semaphore(2);
    const a = (await semaphore.acquire(live()))!;
    await semaphore.acquire(live());
    let third: Release | null | undefined;
    void semaphore.acquire(live()).then((r) => (third = r));
    await tick();
    expect(third).toBeUndefined();
    expect(semaphore.held).toBe(2);
    a();
    a(); // a second release gives nothing back twice
    await tick();
    expect(third).toBeTypeOf('function');
    expect(semaphore.held).toBe(2);
  });

  it('serves waiters in arrival order, so a heavy waiter is not overtaken by lighter ones', async () => {
    const semaphore = new Semaphore(3);
    const first = (await semaphore.acquire(live()))!;
    const order: string[] = [];
    const heavy = semaphore.acquire(live(), 3).then((release) => {
      order.push('heavy');
      return release!;
    });
    const light = semaphore.acquire(live()).then((release) => {
      order.push('light');
      return release!;
    });
    await tick();
    // Two permits are free, enough for `light`, but `heavy` came first and needs all three.
    expect(order).toEqual([]);
    first();
    (await heavy)();
    (await light)();
    expect(order).toEqual(['heavy', 'light']);
  });

  it('treats a weight above the capacity as the whole capacity', async () => {
    const semaphore = new Semaphore(2);
    const release = await semaphore.acquire(live(), 10);
    expect(semaphore.held).toBe(2);
    release!();
    expect(semaphore.held).toBe(0);
  });

  it('resolves null for an aborted waiter and lets the ones behind it in', async () => {
    const semaphore = new Semaphore(2);
    const held = (await semaphore.acquire(live()))!;
    const controller = new AbortController();
    const blocked = semaphore.acquire(controller.signal, 2);
    let behind: Release | null | undefined;
    void semaphore.acquire(live()).then((r) => (behind = r));
    await tick();
    expect(behind).toBeUndefined();
    controller.abort();
    expect(await blocked).toBeNull();
    await tick();
    expect(behind).toBeTypeOf('function');
    held();
    expect(await semaphore.acquire(AbortSignal.abort())).toBeNull();
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
    expect(() => new Semaphore(1.5)).toThrow(RangeError);
  });
});

import { RateLimiterRedis } from 'rate-limiter-flexible';
import { closeRedis, createRedis, type Redis } from '@agent-backend/redis';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Limits, RateDecision, RateRule } from './limits.js';
import { createRedisLimits } from './redis-limits.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('limits-leases', { beforeAll, afterAll });

/**
 * Rate limits leased to replicas (docs/limits.md, "Leases"): the deployment's total never
 * exceeds the limit, and a request costs far less than one Redis call.
 */
describe('redis rate leases', () => {
  const open: Limits[] = [];
  const connections: Redis[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    await Promise.all(connections.splice(0).map((c) => closeRedis(c)));
  });
  /** Limits of independent replicas: each on its own connection (auto-pipelined), one prefix. */
  const replicas = (count: number, prefix: string, rules: Record<string, RateRule>) =>
    Array.from({ length: count }, (_, i) => {
      const connection = createRedis(url, {
        name: `test-limits-leases-${i}`,
        redisOptions: { enableAutoPipelining: true },
      });
      connections.push(connection);
      const limits = createRedisLimits({ redis: connection, prefix, rules });
      open.push(limits);
      return limits;
    });

  /**
   * The commands clients sent that name a key under `prefix` while `work` ran (MONITOR; the
   * commands a script runs inside are left out: a script call is one).
   */
  const commandsUnder = async (prefix: string, work: () => Promise<void>): Promise<string[][]> => {
    const monitor = await testRedis.raw.duplicate().monitor();
    const seen: string[][] = [];
    const marker = `${prefix}monitor-end`;
    let ended = false;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args.includes(marker)) ended = true;
      else if (source !== 'lua' && args.some((arg) => arg.startsWith(prefix))) seen.push(args);
    });
    try {
      await work();
      await testRedis.raw.get(marker);
      await vi.waitFor(() => expect(ended).toBe(true), { timeout: 5_000, interval: 20 });
    } finally {
      monitor.disconnect();
    }
    return seen;
  };

  it('never admits more than the limit across two replicas under concurrent load', async () => {
    const prefix = testRedis.fresh();
    const [a, b] = replicas(2, prefix, { writes: { points: 500, windowMs: 60_000 } });
    const load = (limits: Limits, n: number) =>
      Promise.all(Array.from({ length: n }, () => limits.consume('writes', 'alice')));
    // In waves, so each replica asks for leases many times while the other holds some.
    const decisions: RateDecision[] = [];
    for (let wave = 0; wave < 10; wave++) {
      decisions.push(...(await Promise.all([load(a!, 37), load(b!, 41)])).flat());
    }
    // 780 asked; every unit leased was spent (each replica had more requests than units).
    expect(decisions.filter((d) => d.allowed)).toHaveLength(500);
    expect(await testRedis.raw.get(`${prefix}limit:writes:alice`)).toBe('500');
    expect(decisions.at(-1)).toMatchObject({ allowed: false, remaining: 0 });
    // Another user of the same class is untouched, on either replica.
    expect(await a!.consume('writes', 'bob')).toMatchObject({ allowed: true, remaining: 499 });
    expect((await b!.consume('writes', 'bob')).allowed).toBe(true);
  });

  it('asks Redis far less than once a request within a large limit', async () => {
    const prefix = testRedis.fresh();
    const [limits] = replicas(1, prefix, { writes: { points: 100_000, windowMs: 60_000 } });
    const decisions: RateDecision[] = [];
    const commands = await commandsUnder(prefix, async () => {
      for (let i = 0; i < 100; i++) decisions.push(await limits!.consume('writes', 'alice'));
    });
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // A lease of 20 units: 5 calls for 100 requests (a request each before leases).
    expect(commands.length).toBeLessThanOrEqual(10);
    // One replica knows every unit it spent: what is left is exact.
    expect(decisions.map((d) => d.remaining).slice(0, 3)).toEqual([99_999, 99_998, 99_997]);
    expect(decisions.at(-1)!.remaining).toBe(99_900);
    expect(Number(await testRedis.raw.get(`${prefix}limit:writes:alice`))).toBeLessThanOrEqual(
      100 + 20,
    );
  });

  it('asks once for the concurrent requests of one key, and remembers a spent window', async () => {
    const prefix = testRedis.fresh();
    const [limits] = replicas(1, prefix, { invoke: { points: 30, windowMs: 60_000 } });
    let decisions: RateDecision[] = [];
    const first = await commandsUnder(prefix, async () => {
      decisions = await Promise.all(
        Array.from({ length: 25 }, () => limits!.consume('invoke', 'alice')),
      );
    });
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // The first request asks alone; the 24 that waited for it share the next lease.
    expect(first.length).toBeLessThanOrEqual(2);
    const refusals = await commandsUnder(prefix, async () => {
      decisions = await Promise.all(
        Array.from({ length: 20 }, () => limits!.consume('invoke', 'alice')),
      );
      for (let i = 0; i < 20; i++) decisions.push(await limits!.consume('invoke', 'alice'));
    });
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(decisions.at(-1)!.resetMs).toBeGreaterThan(0);
    // Refused from memory until the window ends, not a Redis call each.
    expect(refusals.length).toBeLessThanOrEqual(3);
  });

  it('lets no lease outlive its window', async () => {
    const prefix = testRedis.fresh();
    const [limits] = replicas(1, prefix, { burst: { points: 1_000, windowMs: 1_000 } });
    const first = await limits!.consume('burst', 'alice');
    expect(first.allowed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, first.resetMs + 50));
    // The units leased in the old window are gone: a new window, counted afresh.
    const next = await limits!.consume('burst', 'alice');
    expect(next).toMatchObject({ allowed: true, remaining: 999 });
    expect(Number(await testRedis.raw.get(`${prefix}limit:burst:alice`))).toBeLessThanOrEqual(20);
  });

  it('drops the leases with the Redis connection: a restarted Redis starts the window afresh', async () => {
    const prefix = testRedis.fresh();
    const [limits] = replicas(1, prefix, { small: { points: 3, windowMs: 60_000 } });
    for (let i = 0; i < 3; i++)
      expect((await limits!.consume('small', 'alice')).allowed).toBe(true);
    expect((await limits!.consume('small', 'alice')).allowed).toBe(false);
    // Redis restarts without its data: the counter is gone and the connection closes.
    await testRedis.raw.del(`${prefix}limit:small:alice`);
    const connection = connections[0]!;
    const ready = new Promise((resolve) => connection.once('ready', resolve));
    connection.disconnect(true);
    await ready;
    // The spent window remembered here went with the connection: the new window admits again.
    expect(await limits!.consume('small', 'alice')).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('counts on from a window rate-limiter-flexible started (a rolling upgrade)', async () => {
    const prefix = testRedis.fresh();
    // The code before leases: rate-limiter-flexible's counter under the same key.
    const old = new RateLimiterRedis({
      storeClient: testRedis.raw,
      keyPrefix: `${prefix}limit:invoke`,
      points: 10,
      duration: 60,
    });
    for (let i = 0; i < 7; i++) await old.consume('alice');
    const [limits] = replicas(1, prefix, { invoke: { points: 10, windowMs: 60_000 } });
    const decisions: RateDecision[] = [];
    for (let i = 0; i < 5; i++) decisions.push(await limits!.consume('invoke', 'alice'));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions[0]!.resetMs).toBeGreaterThan(55_000);
    // And the old code sees what the leases took: the window is full for it too.
    await expect(old.consume('alice')).rejects.toMatchObject({ remainingPoints: 0 });
  });
});

import type { Redis } from '@agent-backend/redis';
import { defineScript, redisKeys, scanKeys, unlinkKeys } from '@agent-backend/redis';
import {
  SLOT_POOLS,
  LimitsClosedError,
  DEFAULT_SLOT_LEASE_MS,
  renewEvery,
  type Limits,
  type RateDecision,
  type RateRule,
  type SlotDecision,
  type SlotLeaseOptions,
  type SlotPool,
} from './limits.js';
import { RateLeases } from './rate-leases.js';
import { rateLimiters } from './rate-rules.js';

export interface RedisLimitsOptions extends SlotLeaseOptions {
  /** The service's shared connection (not closed by `close()`). */
  redis: Redis;
  /** The deployment's key prefix (`REDIS_KEY_PREFIX`). */
  prefix: string;
  /** The rate limits by name. */
  rules: Readonly<Record<string, RateRule>>;
  /**
   * The most units of a rate limit one replica leases at a time (docs/limits.md, "Leases");
   * 1: every request asks Redis. @default 20
   */
  maxLease?: number;
}

/**
 * Takes a slot: drops the expired members (a crashed replica's holders), then adds the holder with
 * its lease's end unless the user already holds `max`. Scores are Redis's own clock, so replicas
 * with skewed clocks agree on what expired. Returns the slots held afterwards, negated when
 * refused.
 * KEYS[1] the user's slots of a pool; ARGV: holderId, max, leaseMs.
 */
const ACQUIRE = defineScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local held = redis.call('ZCARD', KEYS[1])
  if held >= tonumber(ARGV[2]) then return -held end
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return redis.call('ZCARD', KEYS[1])
`);

/**
 * Extends the leases of the slots this replica holds in one user's pool; a slot already expired
 * (and maybe taken) is not revived.
 * KEYS[1] the user's slots of a pool; ARGV: leaseMs, then the holder ids.
 */
const RENEW = defineScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) > now then
    redis.call('ZADD', KEYS[1], now + lease, ARGV[i])
    renewed = renewed + 1
  end
end
if renewed > 0 then redis.call('PEXPIRE', KEYS[1], lease) end
return renewed
`);

/**
 * Adds to a counter and restarts its time to live; returns the value. One command, one round trip.
 * KEYS[1] the counter; ARGV: amount, ttlMs.
 */
const ADD = defineScript(`
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return value
`);

/** One acquisition of a slot in this replica; a newer one of the same holder replaces it. */
interface Holding {
  /** Set by `leave()`: forgets the holding once its lease ran out. */
  forget?: NodeJS.Timeout;
}

/**
 * The distributed limits: a counter per rate limit and key under `<prefix>limit:<name>:<key>`
 * for its fixed window, leased to replicas a few units at a time (see {@link RateLeases}); each user's slots of a pool as a sorted set
 * `<prefix>limit:<pool>:<userId>` of holder ids scored by the end of their lease, renewed by the
 * replica holding them; counters as plain integers `<prefix>limit:<key>` (INCRBY and PEXPIRE in
 * one script).
 */
class RedisLimits implements Limits {
  /** The rules that are on (points > 0), in whole seconds as the window's unit; off: null. */
  private readonly rules = new Map<string, RateRule | null>();
  private readonly leases: RateLeases;
  private readonly keys;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  /** The slots this replica renews: holder ids by pool key, all renewed by one timer. */
  private readonly held = new Map<string, Set<string>>();
  /**
   * The latest acquisition in this replica of each slot it holds or left (for one lease), by
   * `<pool key>\n<holderId>`: only its decision frees or leaves the slot (see
   * `SlotDecision.release`).
   */
  private readonly holdings = new Map<string, Holding>();
  private renewTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: RedisLimitsOptions) {
    this.keys = redisKeys(options.prefix);
    this.leaseMs = options.leaseMs ?? DEFAULT_SLOT_LEASE_MS;
    this.renewEveryMs = options.renewEveryMs ?? renewEvery(this.leaseMs);
    for (const [name, rule] of rateLimiters(options.rules, (rule) => rule)) {
      this.rules.set(name, rule && { points: rule.points, windowMs: rule.duration * 1000 });
    }
    this.leases = new RateLeases(
      options.redis,
      (name, key) => this.keys.limit(`${name}:${key}`),
      options.maxLease,
    );
  }

  async consume(name: string, key: string): Promise<RateDecision> {
    this.assertOpen();
    const rule = this.rules.get(name);
    if (rule === undefined) throw new RangeError(`no rate limit named ${name}`);
    if (rule === null) return { allowed: true, limit: 0, remaining: 0, resetMs: 0 };
    return this.leases.consume(name, rule, key);
  }

  async acquireSlot(
    pool: SlotPool,
    userId: string,
    holderId: string,
    max: number,
  ): Promise<SlotDecision> {
    this.assertOpen();
    const key = this.keys.limit(`${pool}:${userId}`);
    const { redis } = this.options;
    const held = Number(await ACQUIRE(redis, [key], [holderId, max, this.leaseMs]));
    if (held < 0) return { granted: false, held: -held };
    let holders = this.held.get(key);
    if (!holders) this.held.set(key, (holders = new Set()));
    holders.add(holderId);
    this.renewTimer ??= setInterval(() => this.renewAll(), this.renewEveryMs).unref();
    const id = `${key}\n${holderId}`;
    // Taken again: the previous acquisition's decision no longer stops renewing or frees it.
    clearTimeout(this.holdings.get(id)?.forget);
    const holding: Holding = {};
    this.holdings.set(id, holding);
    const current = () => this.holdings.get(id) === holding;
    const stopRenewing = () => {
      const mine = this.held.get(key);
      mine?.delete(holderId);
      if (mine?.size === 0) this.held.delete(key);
    };
    let left = false;
    return {
      granted: true,
      release: async () => {
        if (!current()) return;
        clearTimeout(holding.forget);
        this.holdings.delete(id);
        stopRenewing();
        await redis.zrem(key, holderId);
      },
      leave: () => {
        if (left || !current()) return;
        left = true;
        stopRenewing();
        // Past its lease the slot is free or someone else's: this decision frees nothing then.
        holding.forget = setTimeout(() => {
          if (current()) this.holdings.delete(id);
        }, this.leaseMs).unref();
      },
    };
  }

  async addToCounter(name: string, amount: number, ttlMs: number): Promise<number> {
    this.assertOpen();
    const key = this.keys.limit(name);
    const { redis } = this.options;
    if (amount === 0) return Number((await redis.get(key)) ?? 0);
    return Number(await ADD(redis, [key], [amount, ttlMs]));
  }

  async forgetUser(userId: string): Promise<number> {
    this.assertOpen();
    const { redis } = this.options;
    const keys = SLOT_POOLS.map((pool) => this.keys.limit(`${pool}:${userId}`));
    // The user's daily token counters, whatever their day.
    const glob = this.keys.limit(`tokens:${userId}:`).replace(/[*?[\]\\]/g, '\\$&');
    for await (const page of scanKeys(redis, `${glob}*`)) keys.push(...page);
    for (const [name, rule] of this.rules)
      if (rule) keys.push(this.keys.limit(`${name}:${userId}`));
    this.leases.forget(userId);
    return unlinkKeys(redis, keys);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    this.held.clear();
    this.leases.close();
    for (const holding of this.holdings.values()) clearTimeout(holding.forget);
  }

  /**
   * One script call per pool key this replica holds slots in, sent together. A failed renewal
   * is retried at the next tick; the lease outlasts two of them.
   */
  private renewAll(): void {
    const { redis } = this.options;
    for (const [key, holders] of this.held) {
      RENEW(redis, [key], [this.leaseMs, ...holders]).catch(() => {});
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new LimitsClosedError();
  }
}

export function createRedisLimits(options: RedisLimitsOptions): Limits {
  return new RedisLimits(options);
}

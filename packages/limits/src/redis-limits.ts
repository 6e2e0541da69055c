import type { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { defineScript, redisKeys } from '@agent-backend/redis';
import {
  LimitsClosedError,
  renewEvery,
  type Limits,
  type RateDecision,
  type RateRule,
  type SlotDecision,
  type SlotLeaseOptions,
} from './limits.js';
import { consumeWith, forgetKey, rateLimiters } from './rate-rules.js';

export interface RedisLimitsOptions extends SlotLeaseOptions {
  /** The service's shared connection (not closed by `close()`). */
  redis: Redis;
  /** The deployment's key prefix (`REDIS_KEY_PREFIX`). */
  prefix: string;
  /** The rate limits by name. */
  rules: Readonly<Record<string, RateRule>>;
}

/**
 * Takes a slot: drops the expired members (a crashed replica's runs), then adds the run with
 * its lease's end unless the user already holds `max`. Scores are Redis's own clock, so replicas
 * with skewed clocks agree on what expired. Returns the slots held afterwards, negated when
 * refused.
 * KEYS[1] the user's slots; ARGV: runId, max, leaseMs.
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

/** Extends a held slot's lease; a slot already expired (and maybe taken) is not revived. */
const RENEW = defineScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= now then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`);

/**
 * The distributed limits: rate-limiter-flexible's atomic Redis counters (one Lua call a
 * request) under `<prefix>limit:<name>:`, and each user's run slots as a sorted set
 * `<prefix>limit:runs:<userId>` of run ids scored by the end of their lease, renewed by the
 * replica running them.
 */
class RedisLimits implements Limits {
  private readonly limiters;
  private readonly keys;
  private readonly leaseMs: number;
  private readonly renewals = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly options: RedisLimitsOptions) {
    this.keys = redisKeys(options.prefix);
    this.leaseMs = options.leaseMs ?? 30_000;
    this.limiters = rateLimiters(
      options.rules,
      (rule) =>
        new RateLimiterRedis({
          ...rule,
          storeClient: options.redis,
          keyPrefix: this.keys.limit(rule.keyPrefix),
        }),
    );
  }

  async consume(name: string, key: string): Promise<RateDecision> {
    this.assertOpen();
    return consumeWith(this.limiters, name, key);
  }

  async acquireRunSlot(userId: string, runId: string, max: number): Promise<SlotDecision> {
    this.assertOpen();
    const key = this.keys.limit(`runs:${userId}`);
    const { redis } = this.options;
    const held = Number(await ACQUIRE(redis, [key], [runId, max, this.leaseMs]));
    if (held < 0) return { granted: false, held: -held };
    const timer = setInterval(() => {
      // A failed renewal is retried at the next tick; the lease outlasts two of them.
      RENEW(redis, [key], [runId, this.leaseMs]).catch(() => {});
    }, renewEvery(this.leaseMs));
    timer.unref();
    this.renewals.add(timer);
    let released = false;
    return {
      granted: true,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        this.renewals.delete(timer);
        await redis.zrem(key, runId);
      },
    };
  }

  async forgetUser(userId: string): Promise<number> {
    this.assertOpen();
    const slots = await this.options.redis.unlink(this.keys.limit(`runs:${userId}`));
    return slots + (await forgetKey(this.limiters, userId));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.renewals) clearInterval(timer);
    this.renewals.clear();
  }

  private assertOpen(): void {
    if (this.closed) throw new LimitsClosedError();
  }
}

export function createRedisLimits(options: RedisLimitsOptions): Limits {
  return new RedisLimits(options);
}

import { defineScript, type Redis } from '@agent-backend/redis';
import type { RateDecision, RateRule } from './limits.js';

/**
 * Leases a share of one key's rate limit for the current fixed window: starts the window when
 * the counter does not exist (or has no time to live), then adds to the counter the units it
 * grants, never more than what the window has left. The counter is therefore the sum of the
 * units every replica leased, and what replicas admit never exceeds the limit. The lease is
 * `need` units at least (the requests waiting for it), else `min(maxLease, floor(left / 16))`,
 * at least 1: whole leases while much is left, single units near the limit.
 * KEYS[1] the counter; ARGV: limit, windowMs, need, maxLease.
 * Returns { granted, left in the window afterwards, the window's milliseconds to live }.
 */
const LEASE = defineScript(`
local limit = tonumber(ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
local used = 0
if ttl < 0 then
  ttl = tonumber(ARGV[2])
  redis.call('SET', KEYS[1], 0, 'PX', ttl)
else
  used = tonumber(redis.call('GET', KEYS[1]))
end
local left = limit - used
if left <= 0 then return {0, 0, ttl} end
local share = math.max(1, math.min(tonumber(ARGV[4]), math.floor(left / 16)))
local granted = math.min(left, math.max(tonumber(ARGV[3]), share))
redis.call('INCRBY', KEYS[1], granted)
return {granted, left - granted, ttl}
`);

/** The most units one lease takes. @see RateLeasesOptions.maxLease */
export const DEFAULT_MAX_LEASE = 20;

/** What this replica holds of one key's limit in the current window. */
interface Lease {
  /** Leased units not spent yet. */
  units: number;
  /** What the window had left (not leased by anyone) when this replica last asked. */
  left: number;
  /**
   * When the window ends, on this process's clock: the time the lease was asked plus the
   * window's time to live as Redis saw it a little later, so never after Redis's own end.
   */
  endsAt: number;
  /** The lease request in flight, which the key's other requests here wait for. */
  asking?: Promise<void>;
  /** Requests waiting for a lease request: the next one asks for them all at least. */
  waiting: number;
}

/**
 * Rate limits counted for the whole deployment in Redis, one request at a time in this process
 * (docs/limits.md, "Leases"): each replica leases units of a key's window from the shared
 * counter (one script call) and spends them locally, asking again when they run out; one
 * request asks for all the key's requests waiting here. A window with nothing left is
 * remembered until it ends, so a flood of refused requests costs no Redis call either. The
 * leases live in this process only: a replica that dies takes its unspent units with it (they
 * stay counted until the window ends).
 */
export class RateLeases {
  private readonly leases = new Map<string, Lease>();
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    /** The counter's key of `name` for `key`. */
    private readonly counterKey: (name: string, key: string) => string,
    private readonly maxLease: number = DEFAULT_MAX_LEASE,
    private readonly now: () => number = Date.now,
  ) {
    // Leases die with their window: drop the ended ones now and then.
    this.sweep = setInterval(() => this.dropEnded(), 10_000).unref();
    redis.on('close', this.dropAll);
  }

  /**
   * The connection to Redis closed: the leases go too, so while Redis is unreachable every
   * request asks it and gets `LIMITS_ON_REDIS_ERROR`'s answer, as without leases.
   */
  private readonly dropAll = (): void => {
    for (const [id, lease] of this.leases) if (!lease.asking) this.leases.delete(id);
  };

  async consume(name: string, rule: RateRule, key: string): Promise<RateDecision> {
    const id = `${name}\n${key}`;
    for (;;) {
      let lease = this.leases.get(id);
      const now = this.now();
      if (lease && !lease.asking && now >= lease.endsAt) {
        this.leases.delete(id);
        lease = undefined;
      }
      if (lease && !lease.asking) {
        const resetMs = Math.max(0, lease.endsAt - now);
        if (lease.units === 0 && lease.left === 0) {
          return { allowed: false, limit: rule.points, remaining: 0, resetMs };
        }
        if (lease.units > 0) {
          lease.units -= 1;
          // What the window had left when this replica asked, less what it spent since.
          const remaining = lease.left + lease.units;
          return { allowed: true, limit: rule.points, remaining, resetMs };
        }
      }
      if (lease?.asking) {
        lease.waiting += 1;
        try {
          await lease.asking;
        } finally {
          lease.waiting -= 1;
        }
        continue;
      }
      await this.ask(id, name, rule, key, lease);
    }
  }

  /** Forgets this replica's leases of `key` (its counters are deleted by the caller). */
  forget(key: string): void {
    for (const id of this.leases.keys()) {
      if (id.slice(id.indexOf('\n') + 1) === key) this.leases.delete(id);
    }
  }

  close(): void {
    clearInterval(this.sweep);
    this.redis.off('close', this.dropAll);
    this.leases.clear();
  }

  /** One lease request for the key; a failure rejects every request waiting for it. */
  private ask(
    id: string,
    name: string,
    rule: RateRule,
    key: string,
    previous: Lease | undefined,
  ): Promise<void> {
    const lease: Lease = previous ?? { units: 0, left: 0, endsAt: 0, waiting: 0 };
    this.leases.set(id, lease);
    const sent = this.now();
    // This request and those still waiting here: the lease covers them all.
    const need = 1 + lease.waiting;
    const asking = LEASE(
      this.redis,
      [this.counterKey(name, key)],
      [rule.points, rule.windowMs, need, this.maxLease],
    ).then(
      (reply) => {
        const [granted, left, ttl] = (reply as number[]).map(Number) as [number, number, number];
        lease.units += granted;
        lease.left = left;
        lease.endsAt = sent + ttl;
        lease.asking = undefined;
      },
      (error: unknown) => {
        lease.asking = undefined;
        if (this.leases.get(id) === lease && lease.units === 0) this.leases.delete(id);
        throw error;
      },
    );
    lease.asking = asking;
    return asking;
  }

  private dropEnded(): void {
    const now = this.now();
    for (const [id, lease] of this.leases) {
      if (!lease.asking && now >= lease.endsAt) this.leases.delete(id);
    }
  }
}

import {
  closeRedis,
  createRedis,
  defineScript,
  redisKeys,
  scanKeys,
  sendNow,
  type Redis,
  type RedisKeys,
} from '@agent-backend/redis';
import type { EphemeralStore, SetOptions } from './ephemeral-store.js';
import { EphemeralClosedError, EphemeralNotIntegerError, checkStep, checkTtl } from './errors.js';

export type RedisEphemeralStoreOptions = {
  /** Key prefix, see `redisKeys`. @default 'ab:' */
  prefix?: string;
  /** Receives connection errors of a connection the store opened itself. */
  onError?: (err: Error) => void;
} & ({ url: string } | { /** Shared connection; the store does not close it. */ redis: Redis });

/** Fixed window: the TTL is set only when the key has none, i.e. when INCRBY created it. */
const incrementScript = defineScript(`
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return value
`);

/**
 * The distributed ephemeral store: every operation is one atomic Redis command or script, so it
 * holds across replicas. Expiry is Redis's own (server clock), not the replicas'.
 */
class RedisEphemeralStore implements EphemeralStore {
  private closing: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly owned: boolean,
  ) {}

  async set(key: string, value: string, options: SetOptions = {}): Promise<boolean> {
    this.assertOpen();
    const args = [this.keys.ephemeral(key), value];
    if (options.ttlMs !== undefined) args.push('PX', String(checkTtl(options.ttlMs)));
    if (options.ifAbsent) args.push('NX');
    return (await sendNow(this.redis, 'set', args)) === 'OK';
  }

  async get(key: string): Promise<string | null> {
    this.assertOpen();
    return this.redis.get(this.keys.ephemeral(key));
  }

  async delete(key: string): Promise<boolean> {
    this.assertOpen();
    return (await this.redis.del(this.keys.ephemeral(key))) > 0;
  }

  async take(key: string): Promise<string | null> {
    this.assertOpen();
    return this.redis.getdel(this.keys.ephemeral(key));
  }

  async increment(key: string, options: { ttlMs: number; by?: number }): Promise<number> {
    this.assertOpen();
    const ttl = checkTtl(options.ttlMs);
    const by = checkStep(options.by ?? 1);
    try {
      return Number(await incrementScript(this.redis, [this.keys.ephemeral(key)], [by, ttl]));
    } catch (err) {
      if (err instanceof Error && /not an integer/.test(err.message)) {
        throw new EphemeralNotIntegerError(key);
      }
      throw err;
    }
  }

  async ttl(key: string): Promise<number | null> {
    this.assertOpen();
    const ms = await this.redis.pttl(this.keys.ephemeral(key));
    return ms < 0 ? null : ms;
  }

  async keysWithPrefix(prefix: string): Promise<string[]> {
    this.assertOpen();
    const base = this.keys.ephemeral('');
    // SCAN's MATCH is a glob: the prefix's own `*`, `?`, `[`, `]` and `\` are escaped.
    const glob = `${this.keys.ephemeral(prefix).replace(/[*?[\]\\]/g, '\\$&')}*`;
    const found: string[] = [];
    for await (const page of scanKeys(this.redis, glob)) {
      for (const key of page) found.push(key.slice(base.length));
    }
    return found;
  }

  close(): Promise<void> {
    this.closing ??= this.owned ? closeRedis(this.redis) : Promise.resolve();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new EphemeralClosedError();
  }
}

/**
 * A Redis-backed {@link EphemeralStore} (used when `REDIS_URL` is set). Keys live at
 * `<prefix>eph:<key>`. With `url` the store opens its own connection and quits it on close.
 */
export function createRedisEphemeralStore(options: RedisEphemeralStoreOptions): EphemeralStore {
  const keys = redisKeys(options.prefix);
  if ('redis' in options) return new RedisEphemeralStore(options.redis, keys, false);
  const redis = createRedis(options.url, {
    name: 'ephemeral',
    onError: options.onError ?? ((err) => process.emitWarning(err)),
  });
  return new RedisEphemeralStore(redis, keys, true);
}

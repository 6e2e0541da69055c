import { createHash } from 'node:crypto';
import type { Redis } from './connection.js';
import { sendNow } from './send-now.js';

/** A Lua script run atomically on the server; see {@link defineScript}. */
export type RedisScript = (
  redis: Redis,
  keys: readonly string[],
  args: readonly (string | number)[],
) => Promise<unknown>;

/**
 * Wraps a Lua script so it is sent by SHA (`EVALSHA`) and only uploaded when the server does
 * not know it yet (after a restart or `SCRIPT FLUSH`).
 *
 * Why not ioredis `defineCommand`: it patches the client with untyped methods; this keeps the
 * call typed and the script next to the code that uses it.
 */
export function defineScript(lua: string, options: { now?: boolean } = {}): RedisScript {
  const sha = createHash('sha1').update(lua).digest('hex');
  const evalsha = options.now
    ? (redis: Redis, keys: readonly string[], args: readonly (string | number)[]) =>
        sendNow(redis, 'evalsha', [sha, String(keys.length), ...keys, ...args.map(String)])
    : (redis: Redis, keys: readonly string[], args: readonly (string | number)[]) =>
        redis.evalsha(sha, keys.length, ...keys, ...args);
  return async (redis, keys, args) => {
    try {
      return await evalsha(redis, keys, args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

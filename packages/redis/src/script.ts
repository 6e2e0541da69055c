import { createHash } from 'node:crypto';
import type { Redis } from './connection.js';
import { sendNow } from './send-now.js';

/** A Lua script run atomically on the server; see {@link defineScript}. */
export type RedisScript = (
  redis: Redis,
  keys: readonly string[],
  args: readonly (string | number)[],
  options?: ScriptCallOptions,
) => Promise<unknown>;

/** How one call of a {@link RedisScript} is sent. */
export interface ScriptCallOptions {
  /**
   * Sent at once rather than with the connection's auto-pipeline at the end of the turn (see
   * `sendNow`): for a call something waits for on its critical path.
   */
  readonly now?: boolean;
}

/**
 * Wraps a Lua script so it is sent by SHA (`EVALSHA`) and only uploaded when the server does
 * not know it yet (after a restart or `SCRIPT FLUSH`).
 *
 * Why not ioredis `defineCommand`: it patches the client with untyped methods; this keeps the
 * call typed and the script next to the code that uses it.
 */
export function defineScript(lua: string): RedisScript {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis, keys, args, options) => {
    try {
      return await (options?.now
        ? sendNow(redis, 'evalsha', [sha, keys.length, ...keys, ...args])
        : redis.evalsha(sha, keys.length, ...keys, ...args));
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

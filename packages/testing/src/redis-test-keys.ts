import { Redis } from 'ioredis';
import { testRedisUrl, uniquePrefix } from './isolation.js';

/** Test-file hooks, passed in so this package never imports the test runner (benches load it). */
export interface FileHooks {
  beforeAll(fn: () => unknown): void;
  afterAll(fn: () => unknown): void;
}

export interface RedisTestKeys {
  /** A plain connection for checking what an adapter wrote (open between the file's hooks). */
  readonly raw: Redis;
  /** A key prefix no other test uses; its keys are deleted after the file. */
  fresh(): string;
}

/**
 * The Redis side of an adapter test file: a raw connection, and unique prefixes that are
 * cleaned up (`SCAN MATCH <prefix>*` + `DEL`) when the file ends.
 */
export function redisTestKeys(label: string, hooks: FileHooks): RedisTestKeys {
  let raw: Redis | undefined;
  const prefixes: string[] = [];
  hooks.beforeAll(() => {
    raw = new Redis(testRedisUrl(), { connectionName: `test-${label}-raw` });
  });
  hooks.afterAll(async () => {
    if (!raw) return;
    for (const prefix of prefixes) {
      for (let cursor = '0'; ;) {
        const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await raw.del(...keys);
        if ((cursor = next) === '0') break;
      }
    }
    await raw.quit();
  });
  return {
    get raw() {
      if (!raw) throw new Error('redisTestKeys: the raw connection opens in beforeAll');
      return raw;
    },
    fresh() {
      const prefix = uniquePrefix(label);
      prefixes.push(prefix);
      return prefix;
    },
  };
}

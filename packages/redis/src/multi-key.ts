import type { Cluster, Redis as StandaloneRedis } from 'ioredis';
import type { Redis } from './connection.js';

/**
 * Every key matching `pattern` (a `SCAN MATCH` glob), page by page. On a Cluster each master
 * is scanned in turn: `SCAN` only sees the keys of the node it runs on.
 */
export async function* scanKeys(redis: Redis, pattern: string): AsyncGenerator<string[]> {
  const nodes = redis.isCluster ? (redis as Cluster).nodes('master') : [redis as StandaloneRedis];
  for (const node of nodes) {
    for await (const page of node.scanStream({ match: pattern, count: 500 })) {
      const keys = page as string[];
      if (keys.length > 0) yield keys;
    }
  }
}

/**
 * `UNLINK`s `keys`, resolving to how many existed. One command off Cluster; on a Cluster one
 * per key (sent together), since keys of different slots cannot share a command.
 */
export async function unlinkKeys(redis: Redis, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  if (!redis.isCluster) return redis.unlink(...keys);
  const counts = await Promise.all(keys.map((key) => redis.unlink(key)));
  return counts.reduce((sum, n) => sum + n, 0);
}

/** Redis chores of the benchmarks: server facts for the conditions line, removing a prefix. */
import { closeRedis, createRedis } from '../../packages/redis/src/index.js';
import { cpuMs } from './processes.js';

/** The server's version, and its pid when it runs on this machine (to meter its CPU). */
export async function redisServer(url: string): Promise<{ version: string; pid?: number }> {
  const redis = createRedis(url, { name: 'bench-info' });
  const info = await redis.info('server');
  await closeRedis(redis);
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  const local = ['127.0.0.1', 'localhost'].includes(new URL(url).hostname);
  return { version, ...(local && cpuMs(pid) !== undefined ? { pid } : {}) };
}

/** Deletes every key under `prefix` (SCAN + UNLINK). */
export async function unlinkPrefix(url: string, prefix: string): Promise<void> {
  const redis = createRedis(url, { name: 'bench-cleanup' });
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (found.length > 0) await redis.unlink(...found);
  } while (cursor !== '0');
  await closeRedis(redis);
}

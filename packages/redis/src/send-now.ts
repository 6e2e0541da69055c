import { loadIoredis, type Redis } from './connection.js';

/**
 * Sends one command without waiting for the connection's auto-pipeline when nothing is queued
 * in it. With `enableAutoPipelining` (the engines' shared connection) ioredis defers every
 * command to a `setImmediate` in a pipeline of its own: a `Pipeline`, a deferred write and the
 * callbacks that settle it, for a publish that is alone in its turn of the event loop (a tool
 * call and its reply each publish once; about a seventh of a gateway's JavaScript per call at
 * 1,000 calls/s, docs/BENCHMARKS.md). With commands queued, this one joins the queue: it never
 * overtakes a command issued before it on the same connection, so a write and the publish that
 * announces it still reach Redis in that order.
 */
export function sendNow(redis: Redis, name: string, args: string[]): Promise<unknown> {
  if (redis.autoPipelineQueueSize > 0) return redis.call(name, ...args);
  // The module createRedis loaded (not at import: a process without Redis never loads it).
  const command = new (loadIoredis().Command)(name, args, { replyEncoding: 'utf8' });
  void redis.sendCommand(command);
  return command.promise;
}

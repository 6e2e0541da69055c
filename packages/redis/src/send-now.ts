import { loadIoredis, type Redis } from './connection.js';

/** Connections that sent a command at once in this turn of the event loop (see sendNow). */
const sentThisTurn = new Set<Redis>();

/**
 * Sends one command without waiting for the connection's auto-pipeline when it is the first
 * such command of this turn of the event loop and nothing is queued. With `enableAutoPipelining`
 * (the engines' shared connection) ioredis defers every command to a `setImmediate` in a
 * pipeline of its own: a `Pipeline`, a deferred write and the callbacks that settle it, for a
 * command that is alone in its turn (a tool call and its reply each publish once; about a
 * seventh of a gateway's JavaScript per call at 1,000 calls/s), and the wait for the end of the
 * turn is on the path of what waits for the reply (a run's first chunk waits for its run-log
 * append; docs/BENCHMARKS.md). Later commands of the same turn join the auto-pipeline, so a busy
 * process still sends a turn's commands in one write or two rather than one each. A command
 * never overtakes one issued before it on the same connection (with commands queued it joins
 * the queue), so a write and the publish that announces it still reach Redis in that order.
 */
export function sendNow(redis: Redis, name: string, args: string[]): Promise<unknown> {
  if (redis.autoPipelineQueueSize > 0 || sentThisTurn.has(redis)) return redis.call(name, ...args);
  if (sentThisTurn.size === 0) setImmediate(() => sentThisTurn.clear());
  sentThisTurn.add(redis);
  // The module createRedis loaded (not at import: a process without Redis never loads it).
  const command = new (loadIoredis().Command)(name, args, { replyEncoding: 'utf8' });
  void redis.sendCommand(command);
  return command.promise;
}

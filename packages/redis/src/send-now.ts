import { loadIoredis, type Redis } from './connection.js';

/** Connections that sent a command at once in this turn of the event loop (see sendNow). */
const sentThisTurn = new Set<Redis>();

/**
 * Sends one command without waiting for the connection's auto-pipeline, when nothing is queued
 * in it and no other command went out at once on this connection in this turn of the event
 * loop (`everyCommand`: whenever nothing is queued). With `enableAutoPipelining` (the
 * engines' shared connection) ioredis defers every command to a `setImmediate` in a pipeline of
 * its own: a `Pipeline`, a deferred write and the callbacks that settle it, for a command that
 * is alone in its turn, and a wait for the end of the turn on the path of whatever waits for the
 * reply (a run's first chunk waits for its run-log append; docs/BENCHMARKS.md).
 *
 * The turn's later commands join the auto-pipeline, so a busy process still sends them in one
 * write rather than one each. The bus's publishes go `everyCommand` (a tool call and its reply
 * each publish once; a gateway's later replies of a turn would wait for its end). A command
 * never overtakes one issued before it on the same connection (with commands queued it joins the
 * queue), so a write and the publish that announces it still reach Redis in that order.
 */
export function sendNow(
  redis: Redis,
  name: string,
  // Numbers are written as their decimal text by ioredis, as with its own command methods.
  args: (string | number)[],
  options: { everyCommand?: boolean } = {},
): Promise<unknown> {
  if (redis.autoPipelineQueueSize > 0) return redis.call(name, ...args);
  if (!options.everyCommand) {
    if (sentThisTurn.has(redis)) return redis.call(name, ...args);
    if (sentThisTurn.size === 0) setImmediate(() => sentThisTurn.clear());
    sentThisTurn.add(redis);
  }
  // The module createRedis loaded (not at import: a process without Redis never loads it).
  const command = new (loadIoredis().Command)(name, args, { replyEncoding: 'utf8' });
  void redis.sendCommand(command);
  return command.promise;
}

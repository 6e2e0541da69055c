import type { Logger } from '@agent-backend/logger';
import type { LocalRegistry } from './local-registry.js';

/** Time between two slices of a ping pass. */
const SLICE_MS = 50;
/** Connections pinged per slice at least (a small replica pings them all at once). */
const MIN_SLICE = 50;

/**
 * Server pings: a peer that did not answer the previous ping (nor sent anything) is dead and is
 * terminated. One pass visits every connection once, in slices {@link SLICE_MS} apart spread
 * over the first half of the interval: pinging thousands of connections in a few loop turns
 * made one turn do thousands of socket writes, and their pongs came back in one burst, both
 * ahead of every heartbeat waiting meanwhile (the tail of an idle replica's heartbeat round
 * trip). Each connection keeps its place in the pass, so it is checked about one interval after
 * its ping.
 */
export function startPings(
  registry: LocalRegistry,
  intervalMs: number,
  logger: Logger,
): { stop(): void } {
  let pinging = false;
  let stopped = false;
  const slices = Math.max(1, Math.floor(intervalMs / 2 / SLICE_MS));
  const timer = setInterval(() => {
    if (pinging) return;
    pinging = true;
    void (async () => {
      const conns = [...registry.all()];
      const perSlice = Math.max(MIN_SLICE, Math.ceil(conns.length / slices));
      for (let start = 0; start < conns.length && !stopped; start += perSlice) {
        if (start > 0) await new Promise((resolve) => setTimeout(resolve, SLICE_MS).unref());
        for (const conn of conns.slice(start, start + perSlice)) {
          if (!conn.alive) {
            logger.info({ conn: conn.id, user: conn.userId }, 'terminating silent connection');
            conn.ws.terminate();
          } else if (conn.isOpen) {
            conn.alive = false;
            conn.ws.ping();
          }
        }
      }
    })().finally(() => {
      pinging = false;
    });
  }, intervalMs);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}

import type { Logger } from '@agent-backend/logger';
import type { LocalRegistry } from './local-registry.js';

/** Connections pinged per event-loop turn. */
const PING_BATCH = 500;

/**
 * Server pings: a peer that did not answer the previous ping (nor sent anything) is dead and is
 * terminated. One pass visits every connection, in batches that yield to the event loop, so
 * thousands of connections do not stall message handling (or this replica's own heartbeat).
 */
export function startPings(
  registry: LocalRegistry,
  intervalMs: number,
  logger: Logger,
): { stop(): void } {
  let pinging = false;
  const timer = setInterval(() => {
    if (pinging) return;
    pinging = true;
    void (async () => {
      let batch = 0;
      for (const conn of [...registry.all()]) {
        if (!conn.alive) {
          logger.info({ conn: conn.id, user: conn.userId }, 'terminating silent connection');
          conn.ws.terminate();
        } else if (conn.isOpen) {
          conn.alive = false;
          conn.ws.ping();
        }
        if (++batch % PING_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    })().finally(() => {
      pinging = false;
    });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

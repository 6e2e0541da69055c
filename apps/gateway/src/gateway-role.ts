import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';

/** How often this replica tells the others it is alive (presence `replicaTtlMs` is 3x this). */
export const REPLICA_HEARTBEAT_MS = 5_000;

/**
 * Mounts the WebSocket gateway on the context's HTTP server: upgrade requests on `/ws/*`, and
 * this replica's liveness heartbeat in shared presence (its nodes vanish from listings when
 * the heartbeat stops, e.g. after SIGKILL).
 *
 * Foundation skeleton: the WebSocket endpoints of spec 4.3 arrive with the gateway issue; until
 * then an upgrade is refused with 501 so a client gets a clear answer, not a hang.
 */
export async function mountGateway(context: ServiceContext): Promise<MountedRole> {
  const { app, engines, config, logger } = context;
  const beat = () =>
    engines.presence
      .heartbeatReplica(config.instanceId)
      .catch((error: unknown) => logger.warn({ err: error }, 'replica heartbeat failed'));
  await beat();
  const timer = setInterval(beat, REPLICA_HEARTBEAT_MS);
  timer.unref();

  const onUpgrade = (request: IncomingMessage, socket: Duplex) => {
    const path = (request.url ?? '/').split('?')[0];
    const status = path?.startsWith('/ws/') ? '501 Not Implemented' : '404 Not Found';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  app.server.on('upgrade', onUpgrade);

  return {
    name: 'gateway',
    async close() {
      clearInterval(timer);
      app.server.off('upgrade', onUpgrade);
      await engines.presence.removeReplica(config.instanceId).catch(() => {});
    },
  };
}

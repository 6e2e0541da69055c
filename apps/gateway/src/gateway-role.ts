import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import type { Subscription } from '@agent-backend/bus';
import { ServerMessage, WS_CLOSE } from '@agent-backend/protocol';
import {
  GATEWAY_ERROR,
  GatewayCommand,
  GatewayCommandError,
  gatewayChannel,
  userWebChannel,
} from '@agent-backend/node-rpc';
import { identify, kindOfPath, type ConnectionIdentity } from './connection-identity.js';
import type { GatewayServices } from './gateway-services.js';
import { LocalRegistry } from './local-registry.js';
import { NodeConnection } from './node-connection.js';
import { WebConnection } from './web-connection.js';
import { WorkflowTracker } from './workflows.js';

/** Connections pinged per event-loop turn. */
const PING_BATCH = 500;

/**
 * Mounts the WebSocket gateway (spec 4.3) on the context's HTTP server: `/ws/extension`,
 * `/ws/desktop` and `/ws/web` upgrades; this replica's command channel on the bus (tool calls
 * and relays addressed to nodes it holds); per-user web channels; server pings; and this
 * replica's liveness heartbeat in shared presence, which makes its nodes disappear everywhere
 * within `GATEWAY_REPLICA_TTL_MS` if it dies without cleaning up.
 */
export async function mountGateway(context: ServiceContext): Promise<MountedRole> {
  const { app, engines, config, logger, keys } = context;
  const replicaId = config.instanceId;
  const registry = new LocalRegistry();
  const workflows = new WorkflowTracker({
    bus: engines.bus,
    ephemeral: engines.ephemeral,
    logger,
    timeoutMs: config.WORKFLOW_TIMEOUT_MS,
  });
  const services: GatewayServices = {
    replicaId,
    bus: engines.bus,
    presence: engines.presence,
    ephemeral: engines.ephemeral,
    registry,
    workflows,
    logger,
    limits: { maxBufferedBytes: config.GATEWAY_MAX_BUFFERED_BYTES },
  };
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.GATEWAY_MAX_FRAME_BYTES,
    clientTracking: false,
  });
  const webSubscriptions = new Map<string, Promise<Subscription>>();

  const beat = () =>
    engines.presence
      .heartbeatReplica(replicaId)
      .catch((error: unknown) => logger.warn({ err: error }, 'replica heartbeat failed'));
  await beat();
  const heartbeat = setInterval(beat, Math.max(100, Math.floor(config.GATEWAY_REPLICA_TTL_MS / 3)));
  heartbeat.unref();

  const commands = await engines.bus.respond(gatewayChannel(replicaId), async (raw) => {
    const parsed = GatewayCommand.safeParse(raw);
    if (!parsed.success)
      throw new GatewayCommandError(GATEWAY_ERROR.invalidCommand, 'invalid gateway command');
    const command = parsed.data;
    const node = registry.node(command.userId, command.nodeId);
    if (command.kind === 'replace') {
      node?.close(WS_CLOSE.replaced, 'replaced by a newer connection of this node');
      return { closed: Boolean(node) };
    }
    if (!node?.isOpen) {
      throw new GatewayCommandError(
        GATEWAY_ERROR.nodeNotFound,
        `node "${command.nodeId}" is not connected`,
      );
    }
    if (command.kind === 'deliver') {
      if (!node.send(command.message)) {
        throw new GatewayCommandError(
          GATEWAY_ERROR.nodeDisconnected,
          `node "${command.nodeId}" disconnected`,
        );
      }
      return { delivered: true };
    }
    return { response: await node.call(command.request, command.timeoutMs) };
  });

  /** Web messages of a user, from any replica, to this replica's web connections of that user. */
  const subscribeWeb = (userId: string) => {
    webSubscriptions.set(
      userId,
      engines.bus.subscribe(userWebChannel(userId), (message) => {
        const parsed = ServerMessage.safeParse(message);
        if (!parsed.success) return;
        for (const conn of registry.webOf(userId)) conn.send(parsed.data);
      }),
    );
  };
  const unsubscribeWeb = (userId: string) => {
    const subscription = webSubscriptions.get(userId);
    webSubscriptions.delete(userId);
    void subscription?.then((s) => s.unsubscribe()).catch(() => {});
  };

  const accept = async (ws: WebSocket, identity: ConnectionIdentity) => {
    if (identity.kind === 'web') {
      const conn = new WebConnection(ws, identity, services);
      if (registry.addWeb(conn)) subscribeWeb(identity.userId);
      await webSubscriptions.get(identity.userId);
      ws.on('close', () => {
        if (registry.removeWeb(conn)) unsubscribeWeb(identity.userId);
      });
      return;
    }
    const conn = new NodeConnection(ws, identity, services);
    await conn.start();
  };

  let accepting = true;
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://gateway');
    const kind = kindOfPath(url.pathname);
    if (!kind || !accepting) {
      const status = accepting ? '404 Not Found' : '503 Service Unavailable';
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    socket.on('error', () => {});
    void identify(request, kind, url, {
      keys,
      webOrigins: config.GATEWAY_WEB_ORIGINS,
      allowUnauthenticated: config.GATEWAY_ALLOW_UNAUTHENTICATED,
    }).then((identity) => {
      wss.handleUpgrade(request, socket, head, (ws) => {
        if ('code' in identity) {
          logger.info(
            { path: url.pathname, code: identity.code, reason: identity.reason },
            'websocket refused',
          );
          ws.close(identity.code, identity.reason);
          return;
        }
        accept(ws, identity).catch((error: unknown) => {
          logger.error({ err: error, user: identity.userId }, 'websocket setup failed');
          ws.close(1011, 'internal error');
        });
      });
    });
  };
  app.server.on('upgrade', onUpgrade);

  // Server pings: a peer that did not answer the previous ping (nor sent anything) is dead.
  // One pass visits every connection, in batches that yield to the event loop, so thousands of
  // connections do not stall message handling (or this replica's own heartbeat).
  let pinging = false;
  const pinger = setInterval(() => {
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
  }, config.GATEWAY_PING_INTERVAL_MS);
  pinger.unref();

  return {
    name: 'gateway',
    async close() {
      accepting = false;
      clearInterval(pinger);
      clearInterval(heartbeat);
      app.server.off('upgrade', onUpgrade);
      workflows.close();
      const closed = [...registry.all()].map(
        (conn) =>
          new Promise<void>((resolve) => {
            conn.ws.once('close', () => resolve());
            conn.close(WS_CLOSE.goingAway, 'server shutting down');
          }),
      );
      await Promise.race([Promise.all(closed), new Promise((r) => setTimeout(r, 2_000))]);
      // Node entries are removed by each connection's close handler; the replica goes last.
      await Promise.allSettled([
        commands.unsubscribe(),
        ...[...webSubscriptions.keys()].map(unsubscribeWebAsync),
      ]);
      await engines.presence.removeReplica(replicaId).catch(() => {});
    },
  };

  async function unsubscribeWebAsync(userId: string): Promise<void> {
    const subscription = await webSubscriptions.get(userId);
    await subscription?.unsubscribe();
  }
}

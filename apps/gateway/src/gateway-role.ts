import type { WebSocket } from 'ws';
import { WebSocketServer } from 'ws';
import type { RevocationList } from '@agent-backend/auth';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import {
  DISCONNECT_USER_CHANNEL,
  PRESENCE_CHANGES_CHANNEL,
  type PresenceChange,
} from '@agent-backend/node-rpc';
import { DisconnectUserMessage, WS_CLOSE } from '@agent-backend/protocol';
import { respondToCommands } from './command-responder.js';
import type { ConnectionIdentity } from './connection-identity.js';
import { connectionSlots } from './connection-slots.js';
import type { GatewayServices } from './gateway-services.js';
import { LocalRegistry } from './local-registry.js';
import { NodeConnection } from './node-connection.js';
import { startPings } from './pings.js';
import { PresenceRefreshes } from './presence-refreshes.js';
import { startReplicaHeartbeat } from './replica-heartbeat.js';
import { createUpgradeHandler } from './upgrades.js';
import { WebConnection } from './web-connection.js';
import { WebSubscriptions } from './web-subscriptions.js';
import { WorkflowTracker } from './workflows.js';

/**
 * Mounts the WebSocket gateway (spec 4.3) on the context's HTTP server: `/ws/extension`,
 * `/ws/desktop` and `/ws/web` upgrades; this replica's command channel on the bus (tool calls
 * and relays addressed to nodes it holds); per-user web channels; server pings; and this
 * replica's liveness heartbeat in shared presence, which makes its nodes disappear everywhere
 * within `GATEWAY_REPLICA_TTL_MS` if it dies without cleaning up.
 */
export async function mountGateway(context: ServiceContext): Promise<GatewayRole> {
  const { app, engines, config, logger } = context;
  const replicaId = config.instanceId;
  const registry = new LocalRegistry();
  const workflows = new WorkflowTracker({
    bus: engines.bus,
    ephemeral: engines.ephemeral,
    logger,
    timeoutMs: config.WORKFLOW_TIMEOUT_MS,
  });
  // A flush every 100 ms, or sooner with a short TTL (tests): within a tenth of the refresh age.
  const refreshes = new PresenceRefreshes(
    Math.min(100, Math.floor(config.NODE_SILENT_TIMEOUT_MS / 30)),
  );
  const services: GatewayServices = {
    replicaId,
    bus: engines.bus,
    presence: engines.presence,
    ephemeral: engines.ephemeral,
    registry,
    workflows,
    logger,
    limits: {
      maxBufferedBytes: config.GATEWAY_MAX_BUFFERED_BYTES,
      frameRate: {
        framesPerSecond: config.GATEWAY_FRAMES_PER_SECOND,
        bytesPerSecond: config.GATEWAY_BYTES_PER_SECOND,
        maxFrameBytes: config.GATEWAY_MAX_FRAME_BYTES,
      },
      onRateLimited: () => context.metrics.limits.refused('gateway_frames'),
    },
    presenceRefreshMs: Math.floor(config.NODE_SILENT_TIMEOUT_MS / 3),
    refreshes,
    maxToolsPerNode: config.GATEWAY_MAX_TOOLS_PER_NODE,
    metrics: context.metrics.gateway,
  };
  const heartbeat = await startReplicaHeartbeat({
    presence: engines.presence,
    replicaId,
    replicaTtlMs: config.GATEWAY_REPLICA_TTL_MS,
    logger,
    onRevived: () => {
      const { nodes } = registry.size;
      if (nodes === 0) return;
      // Batched like the refreshes, 500 a loop turn: tens of thousands are seconds, not a stall.
      for (const conn of registry.allNodes()) conn.writePresenceAgain();
      logger.warn(
        { nodes },
        'this replica was missing from presence, or its heartbeat failed (Redis restarted empty, or this replica stalled past GATEWAY_REPLICA_TTL_MS); writing its nodes again',
      );
    },
  });
  const commands = await respondToCommands(engines.bus, replicaId, registry);
  // The operator API's disconnect: every replica closes the user's sockets it holds.
  const disconnects = await engines.bus.subscribe(DISCONNECT_USER_CHANNEL, (message) => {
    const parsed = DisconnectUserMessage.safeParse(message);
    if (!parsed.success) return;
    const { user_id: userId } = parsed.data;
    let closed = 0;
    for (const conn of registry.all()) {
      if (conn.identity.userId !== userId) continue;
      conn.close(WS_CLOSE.operatorDisconnect, 'disconnected by the operator');
      closed++;
    }
    logger.info({ userId, closed }, 'user disconnected by the operator');
  });
  const webSubscriptions = new WebSubscriptions(engines.bus, registry);

  const takeSlot = connectionSlots({
    limits: engines.limits,
    replicaId,
    maxNode: config.MAX_NODE_CONNECTIONS_PER_USER,
    maxWeb: config.MAX_WEB_CONNECTIONS_PER_USER,
    failOpen: config.LIMITS_ON_REDIS_ERROR === 'open',
    keptByNewer: [WS_CLOSE.replaced, WS_CLOSE.stale],
    logger,
    onRefused: (limit) => context.metrics.limits.refused(limit),
  });

  const accept = async (ws: WebSocket, identity: ConnectionIdentity) => {
    // Before the connection is registered or its node announced anywhere; its frames wait
    // unread meanwhile (a frame sent right after connecting reaches the connection's handlers).
    ws.pause();
    const slot = await takeSlot(identity);
    if (!slot.held) {
      ws.resume();
      logger.info(
        { user: identity.userId, kind: identity.kind, reason: slot.reason },
        'websocket refused',
      );
      ws.close(
        slot.reason === 'too_many' ? WS_CLOSE.policyViolation : WS_CLOSE.tryAgainLater,
        slot.reason === 'too_many' ? 'too many connections' : 'limits unavailable; retry shortly',
      );
      return;
    }
    ws.once('close', (code: number) => void slot.release(code));
    if (identity.kind === 'web') {
      const conn = new WebConnection(ws, identity, services);
      ws.resume();
      registry.addWeb(conn);
      ws.on('close', () => {
        if (registry.removeWeb(conn)) webSubscriptions.unsubscribe(identity.userId);
      });
      const subscribed = webSubscriptions.subscribe(identity.userId);
      // A frame sent right after connecting is answered once the user's messages reach this socket.
      conn.holdFramesUntil(subscribed);
      await subscribed;
      return;
    }
    const conn = new NodeConnection(ws, identity, services);
    ws.resume();
    await conn.start();
  };
  const upgrades = createUpgradeHandler({
    wss: new WebSocketServer({
      noServer: true,
      maxPayload: config.GATEWAY_MAX_FRAME_BYTES,
      clientTracking: false,
    }),
    identity: {
      verify: context.verifyToken,
      webOrigins: config.GATEWAY_WEB_ORIGINS,
      allowUnauthenticated: config.GATEWAY_ALLOW_UNAUTHENTICATED,
      isRevoked: (userId, iat) => context.revocations.isRevoked(userId, iat),
    },
    corsOrigins: config.CORS_ALLOWED_ORIGINS,
    logger,
    accept,
  });
  app.server.on('upgrade', upgrades.listener);
  context.revocations.onRevoked((userId) => closeRevoked(registry, context.revocations, userId));
  const pings = startPings(registry, config.GATEWAY_PING_INTERVAL_MS, logger);

  return {
    name: 'gateway',
    stopAccepting: () => upgrades.stopAccepting(),
    async close() {
      upgrades.stopAccepting();
      pings.stop();
      refreshes.stop();
      heartbeat.stop();
      app.server.off('upgrade', upgrades.listener);
      workflows.close();
      await closeConnections(registry);
      // Node entries are removed by each connection's close handler; the replica goes last.
      await Promise.allSettled([
        commands.unsubscribe(),
        disconnects.unsubscribe(),
        webSubscriptions.close(),
      ]);
      await engines.presence.removeReplica(replicaId).catch(() => {});
      const gone: PresenceChange = { kind: 'replica_gone', replicaId };
      await engines.bus.publish(PRESENCE_CHANGES_CHANNEL, gone).catch(() => {});
    },
  };
}

/** The mounted gateway; `stopAccepting` refuses new upgrades (503) and keeps the open sockets. */
export interface GatewayRole extends MountedRole {
  stopAccepting(): void;
}

/**
 * Closes the user's connections whose token is revoked now, with 4401 (a client may come back
 * with a fresh token). Connections let in without a token (legacy switch) have none to revoke.
 */
function closeRevoked(registry: LocalRegistry, revocations: RevocationList, userId: string): void {
  for (const conn of registry.all()) {
    const { identity } = conn;
    if (identity.userId !== userId || !identity.authenticated) continue;
    if (revocations.isRevoked(userId, identity.issuedAt))
      conn.close(WS_CLOSE.unauthorized, 'token has been revoked');
  }
}

/** Closes every connection with 1001 and waits for them to close, at most 2 s. */
async function closeConnections(registry: LocalRegistry): Promise<void> {
  const closed = [...registry.all()].map(
    (conn) =>
      new Promise<void>((resolve) => {
        conn.ws.once('close', () => resolve());
        conn.close(WS_CLOSE.goingAway, 'server shutting down');
      }),
  );
  await Promise.race([Promise.all(closed), new Promise((r) => setTimeout(r, 2_000))]);
}

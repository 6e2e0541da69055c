import type WebSocket from 'ws';
import {
  heartbeatOf,
  isStaleConnection,
  NodeClientMessage,
  NodeStatus,
  WS_CLOSE,
  type NodeRecord,
  type NodeStatusMessage,
  type NodeType,
  type HeartbeatMessage,
  type McpResponseMessage,
  type RegisterMessage,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import {
  gatewayChannel,
  PRESENCE_CHANGES_CHANNEL,
  userWebChannel,
  type PresenceChange,
} from '@agent-backend/node-rpc';
import { Connection } from './connection.js';
import { NodeCalls } from './node-calls.js';
import type { ConnectionIdentity } from './connection-identity.js';
import type { GatewayServices } from './gateway-services.js';
import type { Refreshable } from './presence-refreshes.js';

const NODE_TYPES = new Set(NodeClientMessage.options.map((o) => o.shape.type.value));

/**
 * An extension or desktop connection: its presence record (spec 2.1 fields, plus the replica
 * holding it), the JSON-RPC calls in flight to it ({@link NodeCalls}), and the messages it may
 * send.
 */
export class NodeConnection extends Connection implements Refreshable {
  nodeId: string;
  readonly nodeType: NodeType;
  private readonly record: NodeRecord;
  private readonly calls = new NodeCalls(this);
  /** When this connection last wrote its presence entry (ms since the epoch; 0: never). */
  private refreshedAt = 0;
  /** A write of a change to `record` failed: presence may hold an older record until rewritten. */
  private presenceStale = false;
  /** Presence writes are failing; the first failure was logged as a warning, the rest at debug. */
  private presenceFailing = false;
  /** A refresh (TTL only) waits in the replica's batch or is in flight; another adds nothing. */
  private refreshing = false;
  /** Registered (and announced `online` to watching web clients). */
  private registered = false;
  /**
   * The status the last announced presence write stored. Route caches use a node's status
   * (offline and busy nodes are picked last) but not its tasks: a write that changes only
   * `current_tasks` is not announced (every busy node's heartbeats would drop its user's routes).
   */
  private announcedStatus: NodeStatus | undefined;

  constructor(
    ws: WebSocket,
    identity: ConnectionIdentity,
    private readonly services: GatewayServices,
  ) {
    super(ws, identity, services.logger, services.limits, services.metrics);
    if (identity.kind === 'web') throw new Error('a web client is not a node');
    this.nodeId = identity.nodeId!;
    this.nodeType = identity.kind;
    // Spec 2.1 with the register defaults, until the node registers.
    this.record = {
      node_id: this.nodeId,
      node_type: this.nodeType,
      node_name: 'Unknown Node',
      status: 'online',
      os: '',
      os_version: '',
      app_version: '',
      capabilities: [],
      available_tools: [],
      current_tasks: 0,
      max_concurrent_tasks: 3,
      is_connected: true,
    };
    ws.on('close', () => void this.onClosed());
  }

  /** Puts the node in presence and takes over from an older connection of the same node. */
  async start(): Promise<void> {
    const published = this.publishPresence();
    // A frame sent right after connecting (a ping) is answered once the node is listed.
    this.holdFramesUntil(published);
    await published;
  }

  /** Sends a JSON-RPC request and resolves with the node's raw response (matched by `id`). */
  call(request: ToolCallRequest, timeoutMs: number): Promise<unknown> {
    return this.calls.call(request, timeoutMs);
  }

  /**
   * A pong proves the node is there; its presence entry is refreshed only when nothing wrote it
   * for a third of its TTL (see {@link refreshIfDue}). Every pong of a ping pass arrives in one
   * burst, and a Redis write for each made heartbeats queue behind them: at 10,000 idle nodes,
   * 57 % of the gateway's busy time (docs/BENCHMARKS.md, "Against the peers").
   */
  protected override onPong(): void {
    this.refreshIfDue();
  }

  protected override async handle(frame: Record<string, unknown>): Promise<void> {
    if ('jsonrpc' in frame) return this.onRpcResponse(frame);
    // The most frequent frame, checked by hand; an unusual one goes to the schema below.
    const heartbeat = heartbeatOf(frame);
    if (heartbeat) return this.onHeartbeat(heartbeat);
    if (typeof frame.type !== 'string' || !NODE_TYPES.has(frame.type as never)) {
      this.sendError('unknown_type', `unknown message type ${JSON.stringify(frame.type ?? null)}`);
      return;
    }
    const message = this.parse(NodeClientMessage, frame);
    if (!message) return;
    switch (message.type) {
      case 'register':
        return this.onRegister(message);
      case 'heartbeat':
        return this.onHeartbeat(message);
      case 'ping':
        // Changes nothing but the entry's TTL: answered at once (see onHeartbeat).
        this.send({ type: 'pong' });
        this.refreshIfDue();
        return;
      case 'status': {
        const status = NodeStatus.safeParse(message.status);
        if (!status.success) {
          this.sendError('invalid_message', 'status: must be one of online, busy, offline');
          return;
        }
        this.record.status = status.data;
        // With the tasks, so this write also repairs a heartbeat's lost one.
        await this.touch({ status: status.data, current_tasks: this.record.current_tasks });
        return;
      }
      case 'mcp_response':
        return this.onLegacyResponse(message);
      case 'task_complete':
        if ((await this.services.workflows.complete(this.userId, message)) === 'forbidden') {
          this.sendError(
            'task_forbidden',
            `task_complete: task ${message.task_id} is a workflow run of another user`,
          );
        }
        return;
      case 'workflows_list':
        // The extension's answer to a relayed get_workflows: to every web client of the user.
        await this.services.bus.publish(userWebChannel(this.userId), message);
        return;
    }
  }

  private async onRegister(message: RegisterMessage): Promise<void> {
    if (message.node_type !== this.nodeType) {
      this.sendError('invalid_message', `node_type must be "${this.nodeType}" on this endpoint`);
      this.send({ type: 'registered', node_id: message.node_id, success: false });
      return;
    }
    const names = new Set(message.available_tools);
    for (const tool of message.tools ?? []) names.add(tool.name);
    const { maxToolsPerNode } = this.services;
    if (names.size > maxToolsPerNode) {
      // Refused whole: a node's tool list cut by the gateway would lose tools the node relies
      // on without its knowing; it keeps what it registered before (nothing, on a first one).
      this.sendError(
        'too_many_tools',
        `register offers ${names.size} tools; a node may register at most ${maxToolsPerNode}`,
      );
      this.send({ type: 'registered', node_id: message.node_id, success: false });
      return;
    }
    if (message.node_id !== this.nodeId) {
      // The node names itself: re-key it (the URL's node_id, or its default, was provisional).
      const previousId = this.nodeId;
      if (this.services.registry.removeNode(this, previousId)) {
        await this.services.presence.removeNode(this.userId, previousId, {
          replicaId: this.services.replicaId,
        });
        this.announceChange(previousId);
      }
      this.nodeId = message.node_id;
    }
    Object.assign(this.record, {
      node_id: message.node_id,
      node_name: message.node_name,
      os: message.os ?? '',
      os_version: message.os_version ?? '',
      app_version: message.app_version ?? '',
      capabilities: message.capabilities,
      available_tools: [...names],
      max_concurrent_tasks: message.max_concurrent_tasks,
      ...(message.tools ? { tools: message.tools } : {}),
    });
    if (!(await this.publishPresence())) return;
    this.send({ type: 'registered', node_id: this.nodeId, success: true });
    this.registered = true;
    this.announce(this.record.status);
  }

  /**
   * Tells the user's web clients that watch nodes (`watch_nodes`) that this node came or went, on
   * whichever replica they are. Best effort: a lost announcement leaves them the list they read.
   */
  private announce(status: NodeStatus): void {
    const message: NodeStatusMessage = {
      type: 'node_status',
      node_type: this.nodeType,
      node_id: this.nodeId,
      status,
    };
    void this.services.bus.publish(userWebChannel(this.userId), message).catch((error: unknown) => {
      this.logger.debug({ err: error, node: this.nodeId }, 'could not announce node status');
    });
  }

  /**
   * Tells the callers that cache routes to the user's nodes (API replicas) that this node's
   * presence entry changed, after the write. Best effort: they read presence again at the
   * latest after their route age bound.
   */
  private announceChange(nodeId: string): void {
    const change: PresenceChange = { kind: 'node', userId: this.userId, nodeId };
    void this.services.bus.publish(PRESENCE_CHANGES_CHANNEL, change).catch((error: unknown) => {
      this.logger.debug({ err: error, node: nodeId }, 'could not announce the presence change');
    });
  }

  /**
   * A heartbeat that changes the node's record is acknowledged after presence holds the change,
   * so a client that waits for `heartbeat_ack` and then lists its nodes sees it. One that changes
   * nothing (every heartbeat of an idle node) only extends the entry's TTL and `lastSeenAt`,
   * which no API returns: it is acknowledged at once, and the entry is refreshed when due (see
   * {@link refreshIfDue}) without holding up this connection's next frame. A failed write is
   * logged and retried by the next heartbeat (which writes the record's status and tasks again
   * if a change was lost) or pong.
   */
  private async onHeartbeat(message: HeartbeatMessage): Promise<void> {
    const { status, current_tasks } = message;
    if (
      !this.presenceStale &&
      status === this.record.status &&
      current_tasks === this.record.current_tasks
    ) {
      this.send({ type: 'heartbeat_ack' });
      this.refreshIfDue();
      return;
    }
    this.record.status = status;
    this.record.current_tasks = current_tasks;
    await this.touch({ status, current_tasks });
    this.send({ type: 'heartbeat_ack' });
  }

  private onRpcResponse(frame: Record<string, unknown>): void {
    if (this.calls.answer(frame)) return;
    this.sendError(
      'invalid_message',
      `no pending call with id ${JSON.stringify(frame.id ?? null)}`,
    );
  }

  private onLegacyResponse(message: McpResponseMessage): void {
    if (this.calls.answerLegacy(message)) return;
    this.sendError(
      'invalid_message',
      `no pending call with request_id ${JSON.stringify(message.request_id)}`,
    );
  }

  /**
   * Lists this connection as the node's, here and in presence, and closes its older one (4009)
   * here or on the replica holding it; but a connection older than one the node has from the
   * same client instance (`isStaleConnection`: here, or in presence's atomic compare) is
   * refused (4011) instead. @returns whether this connection is now the node's.
   */
  private async publishPresence(): Promise<boolean> {
    // A register frame read before the socket closed must not list a closed connection.
    if (!this.isOpen) return false;
    const { registry, presence, replicaId, bus, logger } = this.services;
    const { connection } = this.identity;
    const held = registry.node(this.userId, this.nodeId);
    if (held && held !== this && isStaleConnection(connection, held.identity.connection)) {
      this.refuseAsStale();
      return false;
    }
    const older = registry.addNode(this);
    older?.close(WS_CLOSE.replaced, 'replaced by a newer connection of this node');
    const existing = await presence.getNode(this.userId, this.nodeId);
    const stored = await presence.upsertNode({
      userId: this.userId,
      nodeId: this.nodeId,
      nodeType: this.nodeType,
      replicaId,
      ...(existing?.replicaId === replicaId ? { connectedAt: existing.connectedAt } : {}),
      ...(connection ? { connection } : {}),
      data: this.record,
    });
    if (isStaleConnection(connection, stored.connection)) {
      this.refuseAsStale();
      return false;
    }
    this.refreshedAt = Date.now();
    this.announcedStatus = this.record.status;
    this.announceChange(this.nodeId);
    if (existing && existing.replicaId !== replicaId) {
      const replace = {
        kind: 'replace',
        userId: this.userId,
        nodeId: this.nodeId,
        byReplica: replicaId,
        ...(connection ? { connection } : {}),
      };
      await bus
        .request(gatewayChannel(existing.replicaId), replace, { timeoutMs: 2_000 })
        .catch((error: unknown) => {
          logger.debug(
            { err: error, node: this.nodeId },
            'older connection could not be replaced (replica gone?)',
          );
        });
    }
    return true;
  }

  /** Leaves the node to a later connection of the same client instance, and closes (4011). */
  private refuseAsStale(): void {
    this.services.registry.removeNode(this);
    this.logger.debug({ node: this.nodeId, user: this.userId }, 'refused a stale node connection');
    this.close(WS_CLOSE.stale, 'stale: a later connection of this client instance holds the node');
  }

  /**
   * Refreshes the node's entry, merging `patch` (the fields of `record` that changed). Never
   * rejects: a failure is logged, and when it lost a change (`patch`, or a rewrite of the whole
   * record) the next heartbeat writes the record's status and tasks again.
   */
  private async touch(patch?: Partial<NodeRecord>): Promise<void> {
    if (!this.isOpen) return;
    let found: boolean;
    try {
      // Not found either when a later connection of this client instance holds the entry:
      // the upsert below is then refused and this one closes as stale (4011).
      const { connection } = this.identity;
      found = await this.services.presence.touchNode(this.userId, this.nodeId, patch, connection);
    } catch (error) {
      this.presenceWriteFailed(error, patch !== undefined);
      return;
    }
    try {
      // Our entry expired (e.g. Redis lost it): write it again, we still hold the node.
      if (!found && this.isOpen) await this.publishPresence();
      else this.refreshedAt = Date.now();
      if (found && patch?.status !== undefined && patch.status !== this.announcedStatus) {
        this.announcedStatus = patch.status;
        this.announceChange(this.nodeId);
      }
    } catch (error) {
      this.presenceWriteFailed(error, true);
      return;
    }
    // A refresh without a patch writes no change, so it does not repair a lost one.
    if (patch || !found) this.presenceStale = false;
    this.presenceFailing = false;
  }

  /**
   * Extends the entry's TTL when nothing wrote it for a third of its TTL: an idle node's
   * heartbeats, pings and pongs come far more often than that, and a Redis command for each was
   * most of an idle gateway's work. The entry's TTL still has two thirds left when refreshed,
   * and an entry Redis lost is written again at the next due refresh.
   */
  private refreshIfDue(): void {
    if (Date.now() - this.refreshedAt < this.services.presenceRefreshMs) return;
    this.refresh();
  }

  /**
   * Extends the entry's TTL without waiting for Redis, with the replica's next batch of
   * refreshes ({@link PresenceRefreshes}). It changes no data, so it needs no order against the
   * connection's other writes, and one waiting or in flight at a time is enough (a client
   * flooding pings cannot pile up Redis commands).
   */
  private refresh(): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.services.refreshes.add(this);
  }

  /**
   * Runs the refresh {@link refresh} queued (called by the batch), unless a write meanwhile (the
   * node's registration, a change) made it needless.
   */
  refreshNow(): void {
    if (Date.now() - this.refreshedAt < this.services.presenceRefreshMs) {
      this.refreshing = false;
      return;
    }
    void this.touch().finally(() => {
      this.refreshing = false;
    });
  }

  private presenceWriteFailed(error: unknown, lostChange: boolean): void {
    if (lostChange) this.presenceStale = true;
    const log = { err: error, node: this.nodeId, user: this.userId, stale: this.presenceStale };
    if (this.presenceFailing) this.logger.debug(log, 'presence write failed again');
    else this.logger.warn(log, 'presence write failed; the next heartbeat or pong retries it');
    this.presenceFailing = true;
  }

  private async onClosed(): Promise<void> {
    this.calls.rejectAll();
    this.services.refreshes.delete(this);
    const { registry, presence, replicaId } = this.services;
    if (registry.removeNode(this)) {
      await presence.removeNode(this.userId, this.nodeId, { replicaId }).then(
        () => this.announceChange(this.nodeId),
        (error: unknown) => {
          this.logger.warn(
            { err: error, node: this.nodeId },
            'could not remove node from presence',
          );
        },
      );
      if (this.registered) this.announce('offline');
    }
  }
}

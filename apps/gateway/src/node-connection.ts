import type WebSocket from 'ws';
import {
  heartbeatOf,
  NodeClientMessage,
  NodeStatus,
  type NodeRecord,
  type NodeStatusMessage,
  type NodeType,
  type HeartbeatMessage,
  type McpResponseMessage,
  type RegisterMessage,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import { userWebChannel } from '@agent-backend/node-rpc';
import { Connection } from './connection.js';
import { NodeCalls, type NodeResponse } from './node-calls.js';
import type { ConnectionIdentity } from './connection-identity.js';
import type { GatewayServices } from './gateway-services.js';
import { NodePresence, type PresentNode } from './node-presence.js';

const NODE_TYPES = new Set(NodeClientMessage.options.map((o) => o.shape.type.value));

/**
 * An extension or desktop connection: the messages it may send, its record (spec 2.1 fields)
 * kept in presence by its {@link NodePresence}, and the JSON-RPC calls in flight to it
 * ({@link NodeCalls}).
 */
export class NodeConnection extends Connection implements PresentNode {
  nodeId: string;
  readonly nodeType: NodeType;
  readonly record: NodeRecord;
  private readonly calls = new NodeCalls(this);
  private readonly presence: NodePresence;
  /** Registered (and announced `online` to watching web clients). */
  private registered = false;

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
    this.presence = new NodePresence(this, services);
    ws.on('close', () => void this.onClosed());
  }

  /** Puts the node in presence and takes over from an older connection of the same node. */
  async start(): Promise<void> {
    const published = this.presence.publish();
    // A frame sent right after connecting (a ping) is answered once the node is listed.
    this.holdFramesUntil(published);
    await published;
  }

  /** Sends a JSON-RPC request and resolves with the node's response (see {@link NodeCalls.call}). */
  call(request: ToolCallRequest, timeoutMs: number): Promise<NodeResponse> {
    return this.calls.call(request, timeoutMs);
  }

  /** Presence lost this replica's entries (see {@link NodePresence.rewrite}). */
  writePresenceAgain(): void {
    this.presence.rewrite();
  }

  /**
   * A pong proves the node is there; its presence entry is refreshed only when nothing wrote it
   * for a third of its TTL (see {@link NodePresence.refreshIfDue}). Every pong of a ping pass arrives in one
   * burst, and a Redis write for each made heartbeats queue behind them: at 10,000 idle nodes,
   * 57 % of the gateway's busy time (docs/BENCHMARKS.md, "Against the peers").
   */
  protected override onPong(): void {
    this.presence.refreshIfDue();
  }

  protected override async handle(frame: Record<string, unknown>, text: string): Promise<void> {
    if ('jsonrpc' in frame) return this.onRpcResponse(frame, text);
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
        this.presence.refreshIfDue();
        return;
      case 'status': {
        const status = NodeStatus.safeParse(message.status);
        if (!status.success) {
          this.sendError('invalid_message', 'status: must be one of online, busy, offline');
          return;
        }
        this.record.status = status.data;
        // With the tasks, so this write also repairs a heartbeat's lost one.
        await this.presence.touch({
          status: status.data,
          current_tasks: this.record.current_tasks,
        });
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
        void this.presence.announceChange(previousId);
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
    // Closed meanwhile (its close removed it, unregistered): not announced online after that.
    if (!(await this.presence.publish()) || !this.isOpen) return;
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
   * A heartbeat that changes the node's record is acknowledged after presence holds the change,
   * so a client that waits for `heartbeat_ack` and then lists its nodes sees it. One that changes
   * nothing (every heartbeat of an idle node) only extends the entry's TTL and `lastSeenAt`,
   * which no API returns: it is acknowledged at once, and the entry is refreshed when due (see
   * {@link NodePresence.refreshIfDue}) without holding up this connection's next frame. A failed write is
   * logged and retried by the next heartbeat (which writes the record's status and tasks again
   * if a change was lost) or pong.
   */
  private async onHeartbeat(message: HeartbeatMessage): Promise<void> {
    const { status, current_tasks } = message;
    if (
      !this.presence.behind &&
      status === this.record.status &&
      current_tasks === this.record.current_tasks
    ) {
      this.send({ type: 'heartbeat_ack' });
      this.presence.refreshIfDue();
      return;
    }
    this.record.status = status;
    this.record.current_tasks = current_tasks;
    await this.presence.touch({ status, current_tasks });
    this.send({ type: 'heartbeat_ack' });
  }

  private onRpcResponse(frame: Record<string, unknown>, text: string): void {
    if (this.calls.answer(frame, text)) return;
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

  private async onClosed(): Promise<void> {
    this.calls.rejectAll();
    this.presence.forget();
    const { registry, presence, replicaId } = this.services;
    if (registry.removeNode(this)) {
      await presence.removeNode(this.userId, this.nodeId, { replicaId }).then(
        () => void this.presence.announceChange(this.nodeId),
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

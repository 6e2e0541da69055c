import type WebSocket from 'ws';
import {
  JSONRPC_VERSION,
  JsonRpcErrorCode,
  NodeClientMessage,
  NodeStatus,
  WS_CLOSE,
  type NodeRecord,
  type NodeType,
  type HeartbeatMessage,
  type McpResponseMessage,
  type RegisterMessage,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import {
  GATEWAY_ERROR,
  GatewayCommandError,
  gatewayChannel,
  userWebChannel,
} from '@agent-backend/node-rpc';
import { Connection } from './connection.js';
import type { ConnectionIdentity } from './connection-identity.js';
import type { GatewayServices } from './gateway-services.js';

interface PendingCall {
  resolve(response: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

const NODE_TYPES = new Set(NodeClientMessage.options.map((o) => o.shape.type.value));

/**
 * An extension or desktop connection: its presence record (spec 2.1 fields, plus the replica
 * holding it), the JSON-RPC calls in flight to it, and the messages it may send.
 */
export class NodeConnection extends Connection {
  nodeId: string;
  readonly nodeType: NodeType;
  private readonly record: NodeRecord;
  private readonly pending = new Map<string, PendingCall>();
  /** When this connection last wrote its presence entry (ms since the epoch; 0: never). */
  private refreshedAt = 0;

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
    await this.publishPresence();
  }

  /** Sends a JSON-RPC request and resolves with the node's raw response (matched by `id`). */
  call(request: ToolCallRequest, timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!this.isOpen) {
        reject(
          new GatewayCommandError(
            GATEWAY_ERROR.nodeDisconnected,
            `node "${this.nodeId}" disconnected`,
          ),
        );
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(request.id);
        reject(
          new GatewayCommandError(
            GATEWAY_ERROR.timeout,
            `node "${this.nodeId}" did not answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.pending.set(request.id, { resolve, reject, timer });
      if (!this.send(request)) {
        this.settle(
          request.id,
          undefined,
          new GatewayCommandError(
            GATEWAY_ERROR.nodeDisconnected,
            `node "${this.nodeId}" disconnected`,
          ),
        );
      }
    });
  }

  /**
   * A pong proves the node is there; its presence entry is refreshed only when no heartbeat or
   * other frame refreshed it for a third of its TTL. Every pong of a ping pass arrives in one
   * burst, and a Redis write for each made heartbeats queue behind them: at 10,000 idle nodes,
   * 57 % of the gateway's busy time (docs/BENCHMARKS.md, "Against the peers").
   */
  protected override onPong(): void {
    if (Date.now() - this.refreshedAt < this.services.presenceRefreshMs) return;
    void this.touch();
  }

  protected override async handle(frame: Record<string, unknown>): Promise<void> {
    if ('jsonrpc' in frame) return this.onRpcResponse(frame);
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
        await this.touch();
        this.send({ type: 'pong' });
        return;
      case 'status': {
        const status = NodeStatus.safeParse(message.status);
        if (!status.success) {
          this.sendError('invalid_message', 'status: must be one of online, busy, offline');
          return;
        }
        this.record.status = status.data;
        await this.touch({ status: status.data });
        return;
      }
      case 'mcp_response':
        return this.onLegacyResponse(message);
      case 'task_complete':
        await this.services.workflows.complete(this.userId, message);
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
    if (message.node_id !== this.nodeId) {
      // The node names itself: re-key it (the URL's node_id, or its default, was provisional).
      const previousId = this.nodeId;
      if (this.services.registry.removeNode(this, previousId)) {
        await this.services.presence.removeNode(this.userId, previousId, {
          replicaId: this.services.replicaId,
        });
      }
      this.nodeId = message.node_id;
    }
    const names = new Set(message.available_tools);
    for (const tool of message.tools ?? []) names.add(tool.name);
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
    await this.publishPresence();
    this.send({ type: 'registered', node_id: this.nodeId, success: true });
  }

  private async onHeartbeat(message: HeartbeatMessage): Promise<void> {
    this.record.status = message.status;
    this.record.current_tasks = message.current_tasks;
    await this.touch({ status: message.status, current_tasks: message.current_tasks });
    this.send({ type: 'heartbeat_ack' });
  }

  private onRpcResponse(frame: Record<string, unknown>): void {
    const id = frame.id;
    if (typeof id !== 'string' || !this.pending.has(id)) {
      this.sendError('invalid_message', `no pending call with id ${JSON.stringify(id ?? null)}`);
      return;
    }
    // The caller validates the response; an invalid one must still settle its call at once.
    this.settle(id, frame);
  }

  private onLegacyResponse(message: McpResponseMessage): void {
    if (!this.pending.has(message.request_id)) {
      this.sendError(
        'invalid_message',
        `no pending call with request_id ${JSON.stringify(message.request_id)}`,
      );
      return;
    }
    const response = message.error
      ? {
          jsonrpc: JSONRPC_VERSION,
          id: message.request_id,
          error: {
            code: JsonRpcErrorCode.InternalError,
            message:
              typeof message.error === 'string' ? message.error : JSON.stringify(message.error),
          },
        }
      : {
          jsonrpc: JSONRPC_VERSION,
          id: message.request_id,
          result: message.result ?? { content: [] },
        };
    this.settle(message.request_id, response);
  }

  private settle(id: string, response: unknown, error?: Error): void {
    const call = this.pending.get(id);
    if (!call) return;
    this.pending.delete(id);
    clearTimeout(call.timer);
    if (error) call.reject(error);
    else call.resolve(response);
  }

  private async publishPresence(): Promise<void> {
    const { registry, presence, replicaId, bus, logger } = this.services;
    const older = registry.addNode(this);
    older?.close(WS_CLOSE.replaced, 'replaced by a newer connection of this node');
    const existing = await presence.getNode(this.userId, this.nodeId);
    await presence.upsertNode({
      userId: this.userId,
      nodeId: this.nodeId,
      nodeType: this.nodeType,
      replicaId,
      ...(existing?.replicaId === replicaId ? { connectedAt: existing.connectedAt } : {}),
      data: this.record,
    });
    this.refreshedAt = Date.now();
    if (existing && existing.replicaId !== replicaId) {
      const replace = {
        kind: 'replace',
        userId: this.userId,
        nodeId: this.nodeId,
        byReplica: replicaId,
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
  }

  private async touch(patch?: Partial<NodeRecord>): Promise<void> {
    if (!this.isOpen) return;
    const found = await this.services.presence.touchNode(this.userId, this.nodeId, patch).then(
      (found) => {
        this.refreshedAt = Date.now();
        return found;
      },
      () => true,
    );
    // Our entry expired (e.g. Redis lost it): write it again, we still hold the node.
    if (!found) await this.publishPresence();
  }

  private async onClosed(): Promise<void> {
    const gone = new GatewayCommandError(
      GATEWAY_ERROR.nodeDisconnected,
      `node "${this.nodeId}" disconnected during the call`,
    );
    for (const id of [...this.pending.keys()]) this.settle(id, undefined, gone);
    const { registry, presence, replicaId } = this.services;
    if (registry.removeNode(this)) {
      await presence.removeNode(this.userId, this.nodeId, { replicaId }).catch((error: unknown) => {
        this.logger.warn({ err: error, node: this.nodeId }, 'could not remove node from presence');
      });
    }
  }
}

import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import {
  WebClientMessage,
  type ExecuteWorkflowMessage,
  type ServerMessage,
} from '@agent-backend/protocol';
import { gatewayChannel, type DeliverCommand } from '@agent-backend/node-rpc';
import type { PresenceEntry } from '@agent-backend/presence';
import { Connection } from './connection.js';
import type { ConnectionIdentity } from './connection-identity.js';
import type { GatewayServices } from './gateway-services.js';

const WEB_TYPES = new Set(WebClientMessage.options.map((o) => o.shape.type.value));

export const EXTENSION_NOT_CONNECTED = 'Extension not connected';

/**
 * A web client connection: keepalives, and workflows relayed to the user's browser extension
 * wherever it is connected (spec 3.2). Messages for web clients arrive on the user's bus channel
 * and go to every web connection of the user on every replica (spec 4.3 rule 2).
 */
export class WebConnection extends Connection {
  /** Whether the client sent `watch_nodes`: only then does it receive `node_status`. */
  private watchingNodes = false;

  constructor(
    ws: WebSocket,
    identity: ConnectionIdentity,
    private readonly services: GatewayServices,
  ) {
    super(ws, identity, services.logger, services.limits, services.metrics);
  }

  protected override async handle(frame: Record<string, unknown>): Promise<void> {
    if (typeof frame.type !== 'string' || !WEB_TYPES.has(frame.type as never)) {
      this.sendError('unknown_type', `unknown message type ${JSON.stringify(frame.type ?? null)}`);
      return;
    }
    const message = this.parse(WebClientMessage, frame);
    if (!message) return;
    switch (message.type) {
      case 'ping':
        this.send({ type: 'pong' });
        return;
      case 'heartbeat':
        this.send({ type: 'heartbeat_ack' });
        return;
      case 'status':
        return; // Accepted; web clients have no presence record to update.
      case 'watch_nodes':
        this.watchingNodes = true;
        return;
      case 'get_workflows': {
        const delivered = await this.deliverToExtension({ type: 'get_workflows' });
        if (!delivered)
          this.send({ type: 'workflows_list', success: false, error: EXTENSION_NOT_CONNECTED });
        return;
      }
      case 'execute_workflow':
        return this.executeWorkflow(message);
    }
  }

  /** `node_status` only after `watch_nodes`; everything else always. */
  override wants(message: ServerMessage): boolean {
    return message.type !== 'node_status' || this.watchingNodes;
  }

  /**
   * Relays the run to the extension with a server-made `task_id` (the correlation key: the
   * extension echoes it in `task_complete`) and acknowledges with `workflow_started`.
   */
  private async executeWorkflow(message: ExecuteWorkflowMessage): Promise<void> {
    const taskId = randomUUID();
    await this.services.workflows.start({
      taskId,
      userId: this.userId,
      workflowId: message.workflow_id,
    });
    const delivered = await this.deliverToExtension({
      type: 'execute_workflow',
      workflow_id: message.workflow_id,
      variables: message.variables,
      task_id: taskId,
    });
    if (!delivered) {
      await this.services.workflows.fail(this.userId, taskId, EXTENSION_NOT_CONNECTED);
      return;
    }
    this.send({ type: 'workflow_started', workflow_id: message.workflow_id, task_id: taskId });
  }

  /** Sends to the user's first available extension (spec 4.3 rule 1). @returns whether one got it. */
  private async deliverToExtension(message: Record<string, unknown>): Promise<boolean> {
    const { presence, bus, logger } = this.services;
    const extensions = (await presence.listNodes(this.userId)).filter(
      (n: PresenceEntry) => n.nodeType === 'extension' && n.data.status !== 'offline',
    );
    for (const extension of extensions) {
      const command: DeliverCommand = {
        kind: 'deliver',
        userId: this.userId,
        nodeId: extension.nodeId,
        message,
      };
      try {
        await bus.request(gatewayChannel(extension.replicaId), command, { timeoutMs: 5_000 });
        return true;
      } catch (error) {
        logger.debug(
          { err: error, node: extension.nodeId },
          'extension unreachable; trying the next one',
        );
      }
    }
    return false;
  }
}

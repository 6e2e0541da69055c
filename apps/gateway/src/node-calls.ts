import {
  JSONRPC_VERSION,
  JsonRpcErrorCode,
  type McpResponseMessage,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import { GATEWAY_ERROR, GatewayCommandError } from '@agent-backend/node-rpc';

interface PendingCall {
  resolve(response: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/** What {@link NodeCalls} needs of the node's connection. */
export interface CallChannel {
  readonly nodeId: string;
  readonly isOpen: boolean;
  /** Sends a frame; false when the connection is closed. */
  send(message: object): boolean;
}

/**
 * The JSON-RPC calls in flight to one node: each settles with the node's answer (matched by
 * `id`, or a legacy `mcp_response` by `request_id`), at its deadline, or when the connection
 * closes.
 */
export class NodeCalls {
  private readonly pending = new Map<string, PendingCall>();

  constructor(private readonly node: CallChannel) {}

  /** Sends a JSON-RPC request and resolves with the node's raw response (matched by `id`). */
  call(request: ToolCallRequest, timeoutMs: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!this.node.isOpen) {
        reject(
          new GatewayCommandError(
            GATEWAY_ERROR.nodeDisconnected,
            `node "${this.node.nodeId}" disconnected`,
          ),
        );
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(request.id);
        reject(
          new GatewayCommandError(
            GATEWAY_ERROR.timeout,
            `node "${this.node.nodeId}" did not answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.pending.set(request.id, { resolve, reject, timer });
      if (!this.node.send(request)) {
        this.settle(
          request.id,
          undefined,
          new GatewayCommandError(
            GATEWAY_ERROR.nodeDisconnected,
            `node "${this.node.nodeId}" disconnected`,
          ),
        );
      }
    });
  }

  /**
   * Settles the call a JSON-RPC response frame answers, as it is: the caller validates the
   * response, and an invalid one must still settle its call at once. False: no call has its id.
   */
  answer(frame: Record<string, unknown>): boolean {
    const id = frame.id;
    if (typeof id !== 'string' || !this.pending.has(id)) return false;
    this.settle(id, frame);
    return true;
  }

  /** Settles the call a legacy `mcp_response` answers, as a JSON-RPC response; false: none. */
  answerLegacy(message: McpResponseMessage): boolean {
    if (!this.pending.has(message.request_id)) return false;
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
    return true;
  }

  /** Rejects every call in flight: the connection closed. */
  rejectAll(): void {
    const gone = new GatewayCommandError(
      GATEWAY_ERROR.nodeDisconnected,
      `node "${this.node.nodeId}" disconnected during the call`,
    );
    for (const id of [...this.pending.keys()]) this.settle(id, undefined, gone);
  }

  private settle(id: string, response: unknown, error?: Error): void {
    const call = this.pending.get(id);
    if (!call) return;
    this.pending.delete(id);
    clearTimeout(call.timer);
    if (error) call.reject(error);
    else call.resolve(response);
  }
}

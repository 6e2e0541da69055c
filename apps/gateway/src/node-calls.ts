import {
  JSONRPC_VERSION,
  JsonRpcErrorCode,
  type McpResponseMessage,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import { RawJson } from '@agent-backend/bus';
import { GATEWAY_ERROR, GatewayCommandError } from '@agent-backend/node-rpc';

/**
 * A node's answer to a call, unvalidated (the caller validates it): the JSON text of its
 * JSON-RPC response frame as it arrived, or the response made of a legacy `mcp_response`.
 */
export type NodeResponse = RawJson | Record<string, unknown>;

interface PendingCall {
  resolve(response: NodeResponse): void;
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

  /** Sends a JSON-RPC request and resolves with the node's response (matched by `id`). */
  call(request: ToolCallRequest, timeoutMs: number): Promise<NodeResponse> {
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
          new GatewayCommandError(
            GATEWAY_ERROR.nodeDisconnected,
            `node "${this.node.nodeId}" disconnected`,
          ),
        );
      }
    });
  }

  /**
   * Settles the call a JSON-RPC response frame answers with `text`, the JSON text the connection
   * parsed `frame` from (and checked against the text rules): it goes to the caller as it is, not
   * serialised again, and the caller validates it; an invalid one still settles its call at
   * once. False: no call has its id.
   */
  answer(frame: Record<string, unknown>, text: string): boolean {
    const id = frame.id;
    return typeof id === 'string' && this.settle(id, new RawJson(text));
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
    for (const id of [...this.pending.keys()]) this.settle(id, gone);
  }

  /** Resolves the call with the node's response, or rejects it; false: no call has `id`. */
  private settle(id: string, outcome: NodeResponse | Error): boolean {
    const call = this.pending.get(id);
    if (!call) return false;
    this.pending.delete(id);
    clearTimeout(call.timer);
    if (outcome instanceof Error) call.reject(outcome);
    else call.resolve(outcome);
    return true;
  }
}

import { randomUUID } from 'node:crypto';
import { BusNoResponderError, BusRemoteError, BusTimeoutError, type Bus } from '@agent-backend/bus';
import type { Presence, PresenceEntry } from '@agent-backend/presence';
import {
  JSONRPC_VERSION,
  JsonRpcResponse,
  NodeToolDescriptor,
  parseToolCallResult,
  type ParsedToolResult,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import { gatewayChannel, ToolCallReply, type ToolCallCommand } from './gateway-commands.js';
import {
  NodeCallError,
  type NodeCallErrorCode,
  type NodeToolCall,
  type NodeToolCaller,
  type NodeTools,
} from './node-tool-caller.js';

export interface BusNodeToolCallerOptions {
  bus: Bus;
  presence: Presence;
  /** @default 60_000 (spec 8) */
  defaultTimeoutMs?: number;
  /**
   * How often a waiting caller checks that the gateway replica holding the node is still alive,
   * so a replica killed mid-call fails the call within about one replica TTL instead of at the
   * call's deadline. @default 1_000
   */
  replicaCheckMs?: number;
}

/** Extra time the bus waits beyond the node deadline, for the gateway's own timeout answer. */
const BUS_GRACE_MS = 2_000;

/**
 * Tool calls to nodes through shared presence and the bus (the only implementation; it works
 * the same in one process and across replicas). See {@link NodeToolCaller} for the contract.
 */
export function createNodeToolCaller(options: BusNodeToolCallerOptions): NodeToolCaller {
  const { bus, presence } = options;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  const replicaCheckMs = options.replicaCheckMs ?? 1_000;

  return {
    async listTools(userId: string): Promise<NodeTools[]> {
      const entries = await presence.listNodes(userId);
      return entries
        .filter((entry) => entry.data.status !== 'offline')
        .map((entry) => ({
          nodeId: entry.nodeId,
          nodeType: entry.nodeType as NodeTools['nodeType'],
          tools: toolsOf(entry),
        }));
    },

    async callTool(call: NodeToolCall): Promise<ParsedToolResult> {
      const timeoutMs = call.timeoutMs ?? defaultTimeoutMs;
      if (call.signal?.aborted) throw new NodeCallError('aborted', 'the tool call was cancelled');
      const node = pickNode(await presence.listNodes(call.userId), call);
      const request: ToolCallRequest = {
        jsonrpc: JSONRPC_VERSION,
        id: randomUUID(),
        method: 'tools/call',
        params: {
          name: call.toolName,
          arguments: call.arguments,
          ...(call.sessionId ? { session_id: call.sessionId } : {}),
        },
      };
      const command: ToolCallCommand = {
        kind: 'tool_call',
        userId: call.userId,
        nodeId: node.nodeId,
        request,
        timeoutMs,
      };

      const watch = new AbortController();
      const onCallerAbort = () =>
        watch.abort(new NodeCallError('aborted', 'the tool call was cancelled'));
      call.signal?.addEventListener('abort', onCallerAbort, { once: true });
      const timer = setInterval(() => {
        presence.liveReplicas().then(
          (live) => {
            if (!live.includes(node.replicaId)) {
              watch.abort(
                new NodeCallError(
                  'node_disconnected',
                  `the gateway holding node "${node.nodeId}" is gone`,
                ),
              );
            }
          },
          () => {},
        );
      }, replicaCheckMs);
      timer.unref();
      try {
        const reply = ToolCallReply.parse(
          await bus.request(gatewayChannel(node.replicaId), command, {
            timeoutMs: timeoutMs + BUS_GRACE_MS,
            signal: watch.signal,
          }),
        );
        return toResult(reply.response, call.toolName);
      } catch (error) {
        throw toNodeCallError(error, node, timeoutMs, watch.signal);
      } finally {
        clearInterval(timer);
        call.signal?.removeEventListener('abort', onCallerAbort);
      }
    },
  };
}

/** Spec 4.3 rule 1: the given node, else the first available one of the type (online before busy). */
function pickNode(entries: PresenceEntry[], call: NodeToolCall): PresenceEntry {
  const ofType = entries.filter((e) => e.nodeType === call.nodeType && e.data.status !== 'offline');
  const node = call.nodeId
    ? ofType.find((e) => e.nodeId === call.nodeId)
    : (ofType.find((e) => e.data.status !== 'busy') ?? ofType[0]);
  if (!node) {
    const which = call.nodeId ? `${call.nodeType} node "${call.nodeId}"` : `${call.nodeType} node`;
    throw new NodeCallError('node_not_found', `no online ${which} is connected for this user`);
  }
  return node;
}

/** The tool list of a presence entry: `tools` descriptors plus bare `available_tools` names. */
export function toolsOf(entry: PresenceEntry): NodeTools['tools'] {
  const described = NodeToolDescriptor.array().safeParse(entry.data.tools ?? []);
  const tools: NodeTools['tools'] = described.success ? described.data : [];
  const names = new Set(tools.map((t) => t.name));
  const available = Array.isArray(entry.data.available_tools) ? entry.data.available_tools : [];
  for (const name of available) {
    if (typeof name === 'string' && !names.has(name)) {
      names.add(name);
      tools.push({ name });
    }
  }
  return tools;
}

function toResult(raw: unknown, toolName: string): ParsedToolResult {
  const response = JsonRpcResponse.safeParse(raw);
  if (!response.success)
    throw new NodeCallError('tool_failed', `the node sent an invalid response to "${toolName}"`);
  if ('error' in response.data) {
    const { code, message } = response.data.error;
    throw new NodeCallError('tool_failed', message, code);
  }
  return parseToolCallResult(response.data.result);
}

function toNodeCallError(
  error: unknown,
  node: PresenceEntry,
  timeoutMs: number,
  watch: AbortSignal,
): NodeCallError {
  if (error instanceof NodeCallError) return error;
  if (watch.aborted && watch.reason instanceof NodeCallError) return watch.reason;
  if (error instanceof BusRemoteError) {
    const known: NodeCallErrorCode[] = ['node_not_found', 'node_disconnected', 'timeout'];
    const code = known.find((c) => c === error.code) ?? 'tool_failed';
    return new NodeCallError(code, error.message);
  }
  if (error instanceof BusNoResponderError) {
    return new NodeCallError(
      'node_not_found',
      `node "${node.nodeId}" is not connected to any live gateway`,
    );
  }
  if (error instanceof BusTimeoutError) {
    return new NodeCallError(
      'timeout',
      `node "${node.nodeId}" did not answer within ${timeoutMs} ms`,
    );
  }
  return new NodeCallError('tool_failed', (error as Error).message);
}

import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Bus, Subscription } from '@agent-backend/bus';
import {
  carriesUnsampled,
  GATEWAY_ERROR,
  GatewayCommand,
  GatewayCommandError,
  gatewayChannel,
  toolCallCommandOf,
  toolCallReply,
} from '@agent-backend/node-rpc';
import { isStaleConnection, WS_CLOSE } from '@agent-backend/protocol';
import type { LocalRegistry } from './local-registry.js';

/** The API's tracer: the no-op one unless tracing is on in this process. */
const tracer = trace.getTracer('@agent-backend/gateway');

/**
 * Answers the commands addressed to this replica on the bus, from any replica: a tool call to a
 * node it holds, a message to deliver to a node, or the order to close an older connection of a
 * node that reconnected elsewhere.
 */
export function respondToCommands(
  bus: Bus,
  replicaId: string,
  registry: LocalRegistry,
): Promise<Subscription> {
  return bus.respond(gatewayChannel(replicaId), async (raw, meta) => {
    // A tool call (the hot path) is checked by hand; anything else, and a malformed one, by the
    // schema.
    const command = toolCallCommandOf(raw) ?? parseCommand(raw);
    const node = registry.node(command.userId, command.nodeId);
    if (command.kind === 'replace') {
      // A later connection of the same client instance stays: the sender's is the stale one.
      if (!node || isStaleConnection(command.connection, node.identity.connection)) {
        return { closed: false };
      }
      node.close(WS_CLOSE.replaced, 'replaced by a newer connection of this node');
      return { closed: true };
    }
    if (!node?.isOpen) {
      // A caller that routed on a cached route sends the call again on a fresh presence read.
      if (command.kind === 'tool_call' && command.notHereOk) return { notHere: true };
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
    // A caller's trace that is not sampled gets no span here either (it would record nothing).
    if (meta.trace && carriesUnsampled(meta.trace))
      return toolCallReply(await node.call(command.request, command.timeoutMs));
    // A span around the JSON-RPC round trip to the node, the child of the caller's span on the
    // replica that sent the command (its context came in the bus envelope).
    const parent = meta.trace
      ? propagation.extract(context.active(), meta.trace)
      : context.active();
    // Attributes only on a span that records (the caller may not have sampled the trace).
    const span = tracer.startSpan('gateway tools/call', { kind: SpanKind.SERVER }, parent);
    if (span.isRecording()) {
      span.setAttributes({
        'rpc.system': 'jsonrpc',
        'rpc.method': 'tools/call',
        'agent_backend.node.id': command.nodeId,
        'agent_backend.tool.name': command.request.params.name,
      });
    }
    try {
      return toolCallReply(await node.call(command.request, command.timeoutMs));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

function parseCommand(raw: unknown): GatewayCommand {
  const parsed = GatewayCommand.safeParse(raw);
  if (!parsed.success)
    throw new GatewayCommandError(GATEWAY_ERROR.invalidCommand, 'invalid gateway command');
  return parsed.data;
}

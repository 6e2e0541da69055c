import { randomUUID } from 'node:crypto';
import {
  INVALID_SPAN_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
} from '@opentelemetry/api';
import { BusNoResponderError, BusRemoteError, BusTimeoutError, type Bus } from '@agent-backend/bus';
import type { Presence, PresenceEntry } from '@agent-backend/presence';
import {
  JSONRPC_VERSION,
  JsonRpcResponse,
  NodeRecord,
  parseToolCallResult,
  toolCallSuccessOf,
  type ParsedToolResult,
  type ToolCallRequest,
} from '@agent-backend/protocol';
import { injectCallSpan, startCallSpan } from './call-spans.js';
import { GATEWAY_ERROR, gatewayChannel, type ToolCallCommand } from './gateway-commands.js';
import { ReplicaWatch } from './replica-watch.js';
import { RouteCache, type CachedRoute, type PresentNode } from './route-cache.js';

export type { PresentNode };
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
   * call's deadline; and how often cached routes' replicas are checked (see `routeMaxAgeMs`).
   * @default 1_000
   */
  replicaCheckMs?: number;
  /**
   * The longest a cached route is used without reading presence again (changes the gateways
   * announce drop it at once; this bounds the ones whose announcement was lost; routes to a
   * replica killed without announcing go when presence no longer lists it alive, checked every
   * `replicaCheckMs`). 0: no cache, presence is read on every call.
   * @default 1_000
   */
  routeMaxAgeMs?: number;
}

/** A {@link NodeToolCaller} that caches the routes to users' nodes. */
export interface RoutingNodeToolCaller extends NodeToolCaller {
  /** The routes cached now (diagnostics, tests). */
  routes(): CachedRoute[];
  /** Stops listening to presence changes (no route is cached after). */
  close(): Promise<void>;
}

/** Default of {@link BusNodeToolCallerOptions.routeMaxAgeMs}. */
const ROUTE_MAX_AGE_MS = 1_000;

/** The API's tracer: the no-op one unless the process registered a provider (tracing on). */
const tracer = trace.getTracer('@agent-backend/node-rpc');

/** Extra time the bus waits beyond the node deadline, for the gateway's own timeout answer. */
const BUS_GRACE_MS = 2_000;

/**
 * Tool calls to nodes through shared presence and the bus (the only implementation; it works
 * the same in one process and across replicas). See {@link NodeToolCaller} for the contract.
 */
export function createNodeToolCaller(options: BusNodeToolCallerOptions): RoutingNodeToolCaller {
  const { bus, presence } = options;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
  const replicaCheckMs = options.replicaCheckMs ?? 1_000;
  const routes = new RouteCache(
    bus,
    presence,
    options.routeMaxAgeMs ?? ROUTE_MAX_AGE_MS,
    replicaCheckMs,
  );
  const watch = new ReplicaWatch(presence, replicaCheckMs);

  return {
    routes: () => routes.routes(),
    close: () => routes.close(),

    // Through the routes the tool calls use: a run's tool list costs no Redis read while they
    // are cached, and a node that connects, registers other tools, changes status or leaves
    // drops them (the gateways announce it), as does the age bound.
    async listTools(userId: string): Promise<NodeTools[]> {
      const { nodes } = await routes.nodes(userId, listNodeRecords);
      return nodes
        .filter(({ record }) => record.status !== 'offline')
        .map(({ record }) => ({
          nodeId: record.node_id,
          nodeType: record.node_type,
          maxConcurrentTasks: record.max_concurrent_tasks,
          tools: toolsOf(record),
        }));
    },

    async callTool(call: NodeToolCall): Promise<ParsedToolResult> {
      const deadline = Date.now() + (call.timeoutMs ?? defaultTimeoutMs);
      if (call.signal?.aborted) throw new NodeCallError('aborted', 'the tool call was cancelled');
      // A cached route is taken as it is (no timer, no promise); the deadline covers a presence
      // lookup: with Redis unreachable its commands wait in the client's queue for reconnects,
      // far past any deadline (tests/faults/network-faults).
      const hit = routes.cached(call.userId);
      const first = hit
        ? { nodes: hit, cached: true }
        : await withinDeadline(routes.nodes(call.userId, listNodeRecords), deadline);
      if (first.cached) {
        // A cached route may be stale: a node missing from it, or a replica that no longer holds
        // it (nothing was sent to the node then), sends the call once more on a fresh read.
        const node = pickNode(first.nodes, call, true);
        const result = node && (await send(call, node, deadline, true));
        if (result !== undefined && result !== NOT_HERE) return result;
        routes.drop(call.userId);
      }
      const fresh = first.cached
        ? await withinDeadline(routes.nodes(call.userId, listNodeRecords), deadline)
        : first;
      return (await send(
        call,
        pickNode(fresh.nodes, call, false),
        deadline,
        false,
      )) as ParsedToolResult;
    },
  };

  /**
   * Sends the call to the replica holding `node` and waits for the node's answer. `cached`:
   * the route came from the cache, and a replica that does not hold the node (or is gone)
   * resolves {@link NOT_HERE} instead of failing the call.
   */
  async function send(
    call: NodeToolCall,
    node: RoutedNode,
    deadline: number,
    cached: boolean,
  ): Promise<ParsedToolResult | typeof NOT_HERE> {
    const timeoutMs = Math.max(1, deadline - Date.now());
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
      ...(cached ? { notHereOk: true as const } : {}),
    };

    const aborter = new AbortController();
    const onCallerAbort = () =>
      aborter.abort(new NodeCallError('aborted', 'the tool call was cancelled'));
    call.signal?.addEventListener('abort', onCallerAbort, { once: true });
    // The replica holding the node is checked alive with every other call's, one read a tick.
    const unwatch = watch.watch(node.replicaId, () =>
      aborter.abort(
        new NodeCallError('node_disconnected', `the gateway holding node "${node.nodeId}" is gone`),
      ),
    );
    // A client span around the bus round trip; its context travels in the bus envelope, so
    // the gateway replica's span is its child (or, not sampled here, is not sampled there
    // either). Off: a span with no context, nothing injected.
    // Attributes only on a span that records (given at the start, the SDK would copy them
    // for an unsampled span too).
    const span = startCallSpan(tracer, 'node-rpc tools/call', SpanKind.CLIENT);
    if (span.isRecording()) {
      span.setAttributes({
        'rpc.system': 'jsonrpc',
        'rpc.method': 'tools/call',
        'agent_backend.node.type': call.nodeType,
        'agent_backend.node.id': node.nodeId,
        'agent_backend.tool.name': call.toolName,
        'agent_backend.gateway.replica': node.replicaId,
      });
    }
    try {
      const raw = await bus.request(gatewayChannel(node.replicaId), command, {
        timeoutMs: timeoutMs + BUS_GRACE_MS,
        signal: aborter.signal,
        ...traceOptions(span),
      });
      // The gateway's own reply (ToolCallReply or ToolCallNotHere) needs no schema; the node's
      // response in it is validated by toResult.
      if (typeof raw !== 'object' || raw === null)
        throw new NodeCallError('tool_failed', 'the gateway sent an invalid reply');
      if (cached && (raw as { notHere?: unknown }).notHere === true) return NOT_HERE;
      const result = toResult((raw as { response?: unknown }).response, call.toolName);
      if (!result.success) span.setStatus({ code: SpanStatusCode.ERROR, message: 'tool error' });
      return result;
    } catch (error) {
      // An older replica answers `node_not_found` (before sending anything to the node); a
      // replica that is gone answers nobody.
      if (cached && !aborter.signal.aborted && notHeld(error)) return NOT_HERE;
      const failure = toNodeCallError(error, node, timeoutMs, aborter.signal);
      span.setStatus({ code: SpanStatusCode.ERROR, message: failure.code });
      throw failure;
    } finally {
      span.end();
      unwatch();
      call.signal?.removeEventListener('abort', onCallerAbort);
    }
  }
}

/** A cached route's replica did not hold the node: nothing reached it, route the call again. */
const NOT_HERE = Symbol('not here');

function notHeld(error: unknown): boolean {
  return (
    error instanceof BusNoResponderError ||
    (error instanceof BusRemoteError && error.code === GATEWAY_ERROR.nodeNotFound)
  );
}

/**
 * The bus request's trace context: the span's, sampled or not (so the gateway replica follows
 * this sampling decision instead of taking one of its own); nothing when tracing is off.
 */
function traceOptions(span: Span): { trace?: Record<string, string> } {
  // Tracing off: the no-op tracer's span holds the shared invalid context, known without the
  // validity check's hex tests on its ids.
  const spanContext = span.spanContext();
  if (spanContext === INVALID_SPAN_CONTEXT || !trace.isSpanContextValid(spanContext)) return {};
  const carrier: Record<string, string> = {};
  injectCallSpan(span, carrier);
  return { trace: carrier };
}

/**
 * `work`, or a `timeout` {@link NodeCallError} at `deadline` (the work goes on unobserved: a
 * presence read has no side effect).
 */
async function withinDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new NodeCallError(
            'timeout',
            'presence did not answer before the call deadline (is Redis reachable?)',
          ),
        ),
      Math.max(0, deadline - Date.now()),
    );
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The user's live nodes from presence, one read, each record parsed with {@link NodeRecord}
 * (an entry whose data does not parse, e.g. written by a future version, is left out).
 */
export async function listNodeRecords(presence: Presence, userId: string): Promise<PresentNode[]> {
  const nodes: PresentNode[] = [];
  for (const entry of await presence.listNodes(userId)) {
    const record = nodeRecordOf(entry);
    if (record) nodes.push({ record, replicaId: entry.replicaId });
  }
  return nodes;
}

/** The typed record of a presence entry; the entry's own id and type win over its data. */
export function nodeRecordOf(entry: PresenceEntry): NodeRecord | undefined {
  const parsed = NodeRecord.safeParse({
    ...entry.data,
    node_id: entry.nodeId,
    node_type: entry.nodeType,
    is_connected: true,
  });
  return parsed.success ? parsed.data : undefined;
}

type RoutedNode = PresentNode & { nodeId: string };

/**
 * Spec 4.3 rule 1: the given node, else the first available one of the type (online before
 * busy). None: `node_not_found`, or undefined when `orNone` (a cached list, read again).
 */
function pickNode(nodes: PresentNode[], call: NodeToolCall, orNone: true): RoutedNode | undefined;
function pickNode(nodes: PresentNode[], call: NodeToolCall, orNone: false): RoutedNode;
function pickNode(
  nodes: PresentNode[],
  call: NodeToolCall,
  orNone: boolean,
): RoutedNode | undefined {
  const ofType = nodes.filter(
    ({ record }) => record.node_type === call.nodeType && record.status !== 'offline',
  );
  const node = call.nodeId
    ? ofType.find(({ record }) => record.node_id === call.nodeId)
    : (ofType.find(({ record }) => record.status !== 'busy') ?? ofType[0]);
  if (!node) {
    if (orNone) return undefined;
    const which = call.nodeId ? `${call.nodeType} node "${call.nodeId}"` : `${call.nodeType} node`;
    throw new NodeCallError('node_not_found', `no online ${which} is connected for this user`);
  }
  return { ...node, nodeId: node.record.node_id };
}

/** The tool list of a node: its `tools` descriptors plus bare `available_tools` names. */
export function toolsOf(record: NodeRecord): NodeTools['tools'] {
  const tools: NodeTools['tools'] = (record.tools ?? []).map((tool) => ({ ...tool }));
  const names = new Set(tools.map((t) => t.name));
  for (const name of record.available_tools) {
    if (!names.has(name)) {
      names.add(name);
      tools.push({ name });
    }
  }
  return tools;
}

/**
 * The node's response, checked: a success by hand (the hot path), anything else by the schema
 * (an error response, or a malformed one and its failure).
 */
function toResult(raw: unknown, toolName: string): ParsedToolResult {
  const success = toolCallSuccessOf(raw);
  if (success) return parseToolCallResult(success);
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
  node: { nodeId: string },
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

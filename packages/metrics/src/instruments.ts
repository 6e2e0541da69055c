/**
 * What the service's packages report, named for what happened, with bounded label values only
 * (enums below, queue names of the service, route templates): never user ids, raw URLs or
 * names a user chose. The packages depend on these interfaces, not on prom-client; with metrics
 * disabled every method is a no-op ({@link NO_METRICS}).
 */

/** An `inc` on a counter child whose labels are already bound. */
export interface Count {
  inc(value?: number): void;
}

/** A gauge child whose labels are already bound. */
export interface Level {
  inc(value?: number): void;
  dec(value?: number): void;
}

export interface HttpMetrics {
  /**
   * One answered request. `route` is the registered path template (`/api/knowledge-bases/:id`)
   * or {@link UNMATCHED_ROUTE}; `method` outside the usual verbs is counted as `other`.
   */
  request(method: string, route: string, status: number, seconds: number): void;
}

/** The `route` label of a request that matched no route (404s of unknown paths, probes). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * How a run ended, or that it suspended or was handed over to another process (`RunResult.status`
 * of the agent runtime).
 */
export type RunOutcome = 'done' | 'error' | 'aborted' | 'suspended' | 'handed_over';

export interface AgentMetrics {
  /** A run starts; call the returned function once, when it ended. */
  runStarted(mode: string): (outcome: RunOutcome) => void;
  /** SSE streams of agent runs open on this replica. */
  readonly streamsOpen: Level;
  /** Seconds from a model request to its first streamed chunk. */
  firstToken(seconds: number): void;
  /** Tokens `model` reported for one request (when the provider reports usage). */
  tokens(model: string, prompt: number, completion: number): void;
}

export type GatewayEndpoint = 'extension' | 'desktop' | 'web';

export interface GatewayMetrics {
  /** Open WebSocket connections of an endpoint. */
  connections(endpoint: GatewayEndpoint): Level;
  /** Frames received from (`in`) and sent to (`out`) the clients of an endpoint. */
  frames(endpoint: GatewayEndpoint, direction: 'in' | 'out'): Count;
}

/**
 * How a node tool call ended: `ok` (the node answered, `isError` false), `tool_error` (answered
 * with `isError: true`), or the caller's error code.
 */
export type NodeToolOutcome =
  | 'ok'
  | 'tool_error'
  | 'node_not_found'
  | 'node_disconnected'
  | 'timeout'
  | 'tool_failed'
  | 'aborted';

export interface NodeToolMetrics {
  call(outcome: NodeToolOutcome, seconds: number): void;
}

/** The outcome of one held tool call (the `approval_result` event's `outcome`). */
export type ApprovalOutcome = 'approved' | 'edited' | 'rejected' | 'timed_out' | 'cancelled';

export interface HitlMetrics {
  /** An approval was requested (stored and announced). */
  requested(): void;
  resolved(outcome: ApprovalOutcome): void;
}

/** `message`: publish/subscribe; `request`: request/reply (a request, or a reply to one). */
export type BusKind = 'message' | 'request' | 'reply';

/** How a bus request ended; other failures (closed bus, encoding) are `error`. */
export type BusRequestOutcome =
  'ok' | 'remote_error' | 'no_responder' | 'timeout' | 'aborted' | 'error';

export interface BusMetrics {
  published(kind: BusKind): Count;
  received(kind: BusKind): Count;
  request(outcome: BusRequestOutcome, seconds: number): void;
}

export type JobOutcome = 'completed' | 'failed';

/** A queue's job counts by state, as the job engine reports them. */
export type QueueCounts = Partial<Record<QueueState, number>>;
export type QueueState = 'waiting' | 'active' | 'delayed' | 'prioritized' | 'failed' | 'completed';

export interface JobMetrics {
  added(queue: string): void;
  /** One attempt of a job ended (a failed attempt may be retried). */
  finished(queue: string, outcome: JobOutcome, seconds: number): void;
  /**
   * Reports the depth of `queues` at each scrape from `counts` (an engine that can count them:
   * BullMQ). A queue already watched is not added again.
   */
  watchDepth(queues: readonly string[], counts: (queue: string) => Promise<QueueCounts>): void;
}

export interface KnowledgeMetrics {
  /** A document was ingested into `chunks` chunks. */
  ingested(chunks: number): void;
  /** An ingestion attempt failed. */
  failed(): void;
}

export interface LimitMetrics {
  /** A request or a run was refused by the limit `limit` (`invoke`, `concurrent_runs`, ...). */
  refused(limit: string): void;
}

export interface RetentionMetrics {
  /** The retention sweep deleted `count` rows of `kind` (`sessions`, `task_runs`, ...). */
  removed(kind: string, count: number): void;
  /** A sweep ended. */
  swept(outcome: 'ok' | 'failed', seconds: number): void;
}

/** Why a request to the operator API was refused at its credential. */
export type OperatorRefusal = 'missing' | 'wrong';

export interface OperatorMetrics {
  /** A request to `/api/operator/*` came without the operator credential or with a wrong one. */
  refused(reason: OperatorRefusal): void;
}

/** Every instrument of one service instance. */
export interface ServiceMetrics {
  /** False when `METRICS_ENABLED=false`: every method does nothing. */
  readonly enabled: boolean;
  readonly http: HttpMetrics;
  readonly agent: AgentMetrics;
  readonly gateway: GatewayMetrics;
  readonly nodeTools: NodeToolMetrics;
  readonly hitl: HitlMetrics;
  readonly bus: BusMetrics;
  readonly jobs: JobMetrics;
  readonly knowledge: KnowledgeMetrics;
  readonly limits: LimitMetrics;
  readonly retention: RetentionMetrics;
  readonly operator: OperatorMetrics;
  /** The Prometheus text exposition of this instance's registry. */
  render(): Promise<{ contentType: string; body: string }>;
}

const noop = () => {};
const NO_COUNT: Count = { inc: noop };
const NO_LEVEL: Level = { inc: noop, dec: noop };

/** Metrics switched off: nothing is recorded and nothing is allocated per call. */
export const NO_METRICS: ServiceMetrics = Object.freeze({
  enabled: false,
  http: { request: noop },
  agent: { runStarted: () => noop, streamsOpen: NO_LEVEL, firstToken: noop, tokens: noop },
  gateway: { connections: () => NO_LEVEL, frames: () => NO_COUNT },
  nodeTools: { call: noop },
  hitl: { requested: noop, resolved: noop },
  bus: { published: () => NO_COUNT, received: () => NO_COUNT, request: noop },
  jobs: { added: noop, finished: noop, watchDepth: noop },
  knowledge: { ingested: noop, failed: noop },
  limits: { refused: noop },
  retention: { removed: noop, swept: noop },
  operator: { refused: noop },
  render: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
});

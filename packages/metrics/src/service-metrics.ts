import { collectDefaultMetrics, type Gauge, Registry } from 'prom-client';
import {
  NO_METRICS,
  type BusKind,
  type Count,
  type GatewayEndpoint,
  type Level,
  type QueueCounts,
  type QueueState,
  type RunOutcome,
  type ServiceMetrics,
} from './instruments.js';
import { counter, declareMetrics, gauge, histogram } from './metric-table.js';

export interface CreateMetricsOptions {
  /** `METRICS_ENABLED`; false returns {@link NO_METRICS}. @default true */
  enabled?: boolean;
  /** Labels on every series of this instance (e.g. `{ role: 'api' }`). */
  defaultLabels?: Record<string, string>;
  /** The `build_info` gauge's labels. @default unknown, unknown */
  build?: { version: string; commit: string };
}

/**
 * The prefix of every metric the service defines (`agent_backend_agent_runs_total`), so its names
 * never meet another exporter's (`node_` is node_exporter's). Node.js's runtime metrics keep
 * their usual names (`process_*`, `nodejs_*`).
 */
export const METRIC_PREFIX = 'agent_backend_';

/**
 * A registry that puts {@link METRIC_PREFIX} before the name of every metric registered on it:
 * the one place the prefix is applied, so a metric added anywhere in this file gets it.
 */
class PrefixedRegistry extends Registry {
  override registerMetric(metric: Parameters<Registry['registerMetric']>[0]): void {
    const named = metric as unknown as { name: string };
    if (!named.name.startsWith(METRIC_PREFIX)) named.name = METRIC_PREFIX + named.name;
    super.registerMetric(metric);
  }
}

/** Request durations: a health probe (sub-millisecond) up to a long SSE stream. */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];
/** Agent runs last seconds to many minutes (tools, approvals). */
const RUN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
/** Round trips through Redis and a gateway, up to the 60 s tool deadline. */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900];

/** Distinct `model` labels of `model_tokens_total`; later models count as {@link OTHER_MODEL}. */
export const MAX_MODEL_LABELS = 50;
/** The `model` label of the models past {@link MAX_MODEL_LABELS} (and of a nameless one). */
export const OTHER_MODEL = 'other';
/** Longest `model` label; a longer name is cut. */
const MAX_MODEL_LABEL_CHARS = 100;

/** Every metric of the service, in the order they are registered and rendered. */
const SERVICE_METRICS = {
  buildInfo: gauge('build_info', 'Always 1; the running version and the commit it was built from', [
    'version',
    'commit',
  ]),
  httpDuration: histogram(
    'http_server_request_duration_seconds',
    'HTTP requests by method, route template and status, from arrival to the end of the answer',
    HTTP_BUCKETS,
    ['method', 'route', 'status'],
  ),
  runs: counter(
    'agent_runs_total',
    'Agent runs by mode and outcome (done, error, aborted, suspended)',
    ['mode', 'outcome'],
  ),
  runDuration: histogram(
    'agent_run_duration_seconds',
    'Agent run duration by mode, from the session event to done or error',
    RUN_BUCKETS,
    ['mode'],
  ),
  runsActive: gauge('agent_runs_active', 'Agent runs executing in this process'),
  streamsOpen: gauge(
    'agent_streams_open',
    'Server-sent event streams of agent runs open on this replica',
  ),
  firstToken: histogram(
    'model_time_to_first_token_seconds',
    'Seconds from a model request to its first streamed chunk',
    [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
  ),
  tokens: counter(
    'model_tokens_total',
    `Tokens reported by model providers, by model (the first ${MAX_MODEL_LABELS} model ` +
      `names seen, then "${OTHER_MODEL}") and kind (prompt, completion)`,
    ['model', 'kind'],
  ),
  rateLimited: counter(
    'rate_limited_total',
    'Requests, runs and WebSocket frames refused by a limit, by limit (docs/limits.md)',
    ['limit'],
  ),
  connections: gauge(
    'gateway_connections',
    'Open WebSocket connections of this gateway replica by endpoint',
    ['endpoint'],
  ),
  frames: counter(
    'gateway_frames_total',
    'WebSocket frames by endpoint and direction (in: from clients, out: to clients)',
    ['endpoint', 'direction'],
  ),
  toolCalls: counter(
    'node_tool_calls_total',
    'Tool calls to nodes through the gateway by outcome',
    ['outcome'],
  ),
  toolDuration: histogram(
    'node_tool_call_duration_seconds',
    'Node tool call round trip (caller, bus, gateway, node and back) by outcome',
    CALL_BUCKETS,
    ['outcome'],
  ),
  approvalsRequested: counter(
    'hitl_approvals_requested_total',
    'Tool calls held for a human decision',
  ),
  approvals: counter(
    'hitl_approvals_total',
    'Held tool calls by outcome (approved, edited, rejected, timed_out, cancelled)',
    ['outcome'],
  ),
  busPublished: counter(
    'bus_messages_published_total',
    'Messages this process published on the bus by kind (message, request, reply)',
    ['kind'],
  ),
  busReceived: counter(
    'bus_messages_received_total',
    'Bus messages handed to a subscriber or responder of this process by kind',
    ['kind'],
  ),
  busRequests: histogram(
    'bus_request_duration_seconds',
    'Bus request/reply latency by outcome',
    CALL_BUCKETS,
    ['outcome'],
  ),
  jobsAdded: counter('jobs_added_total', 'Jobs enqueued by this process by queue', ['queue']),
  jobs: counter(
    'jobs_total',
    'Job attempts run by this process by queue and outcome (completed, failed)',
    ['queue', 'outcome'],
  ),
  jobDuration: histogram('job_duration_seconds', 'Job attempt duration by queue', JOB_BUCKETS, [
    'queue',
  ]),
  queueDepth: gauge(
    'jobs_queue_depth',
    'Jobs in a queue by state, read from the job engine at each scrape (BullMQ only)',
    ['queue', 'state'],
  ),
  ingestedDocuments: counter(
    'knowledge_documents_ingested_total',
    'Knowledge-base documents ingested (split, embedded, stored)',
  ),
  ingestedChunks: counter(
    'knowledge_chunks_ingested_total',
    'Chunks stored by knowledge-base ingestion',
  ),
  ingestFailures: counter(
    'knowledge_ingestion_failures_total',
    'Failed knowledge-base ingestion attempts',
  ),
  retentionRemoved: counter(
    'retention_removed_total',
    'Rows deleted by the retention sweep by kind (sessions, task_runs, knowledge_documents, memories, audit_events), and sandboxes destroyed with their sessions (sandboxes)',
    ['kind'],
  ),
  retentionSweeps: histogram(
    'retention_sweep_duration_seconds',
    'Duration of a retention sweep of this worker, by outcome (ok, failed)',
    JOB_BUCKETS,
    ['outcome'],
  ),
  operatorRefused: counter(
    'operator_auth_failures_total',
    'Requests to the operator API refused at the credential, by reason (missing, wrong)',
    ['reason'],
  ),
};

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const QUEUE_STATES: QueueState[] = ['waiting', 'active', 'delayed', 'prioritized', 'failed'];

/**
 * The instruments of one service instance on a registry of its own (never prom-client's global
 * one, so several services in one process keep apart). Children are bound to their labels once
 * and cached, so a hot path does a map lookup and an increment.
 */
export function createServiceMetrics(options: CreateMetricsOptions = {}): ServiceMetrics {
  if (options.enabled === false) return NO_METRICS;
  const registry = new PrefixedRegistry();
  const runtime = new Registry();
  if (options.defaultLabels) {
    registry.setDefaultLabels(options.defaultLabels);
    runtime.setDefaultLabels(options.defaultLabels);
  }
  collectDefaultMetrics({ register: runtime });
  const registers = [registry];

  const depthSources = new Map<string, (queue: string) => Promise<QueueCounts>>();
  const m = declareMetrics(SERVICE_METRICS, registers, {
    async queueDepth(this: Gauge) {
      this.reset();
      await Promise.all(
        [...depthSources].map(async ([queue, counts]) => {
          // A scrape must not fail because Redis hiccupped: the queue is left out this time.
          const found = await counts(queue).catch(() => undefined);
          if (!found) return;
          for (const state of QUEUE_STATES) this.labels(queue, state).set(found[state] ?? 0);
        }),
      );
    },
  });
  m.buildInfo
    .labels(options.build?.version ?? 'unknown', options.build?.commit ?? 'unknown')
    .set(1);
  // route → (method index * 1000 + status) → child: two lookups, no string built per request.
  const httpChildren = new Map<string, Map<number, { observe(v: number): void }>>();
  // Model names come from requests (`llm_config.modelName`): bounded, so a client cannot grow
  // the registry without end.
  const models = new Set<string>();
  const modelLabel = (name: string): string => {
    const label = name.slice(0, MAX_MODEL_LABEL_CHARS) || OTHER_MODEL;
    if (models.has(label)) return label;
    if (models.size >= MAX_MODEL_LABELS) return OTHER_MODEL;
    models.add(label);
    return label;
  };

  const bound = <C>(make: (...labels: string[]) => C) => {
    const cache = new Map<string, C>();
    return (...labels: string[]): C => {
      const key = labels.length === 1 ? labels[0]! : labels.join('\u0000');
      let child = cache.get(key);
      if (!child) cache.set(key, (child = make(...labels)));
      return child;
    };
  };
  const connectionChild = bound<Level>((endpoint) => m.connections.labels(endpoint));
  const frameChild = bound<Count>((endpoint, direction) => m.frames.labels(endpoint, direction));
  const publishedChild = bound<Count>((kind) => m.busPublished.labels(kind));
  const receivedChild = bound<Count>((kind) => m.busReceived.labels(kind));
  const requestChild = bound((outcome) => m.busRequests.labels(outcome));
  const toolChild = bound((outcome) => ({
    count: m.toolCalls.labels(outcome),
    duration: m.toolDuration.labels(outcome),
  }));
  const approvalChild = bound((outcome) => m.approvals.labels(outcome));
  const runChild = bound((mode, outcome) => m.runs.labels(mode, outcome));
  const tokenChild = bound((model, kind) => m.tokens.labels(model, kind));
  const runDurationChild = bound((mode) => m.runDuration.labels(mode));

  return {
    enabled: true,
    http: {
      request(method, route, status, seconds) {
        let byRoute = httpChildren.get(route);
        if (!byRoute) httpChildren.set(route, (byRoute = new Map()));
        let methodIndex = METHODS.indexOf(method);
        if (methodIndex === -1) methodIndex = METHODS.length;
        const key = methodIndex * 1000 + status;
        let child = byRoute.get(key);
        if (!child) {
          child = m.httpDuration.labels(METHODS[methodIndex] ?? 'other', route, String(status));
          byRoute.set(key, child);
        }
        child.observe(seconds);
      },
    },
    agent: {
      runStarted(mode) {
        const started = performance.now();
        m.runsActive.inc();
        return (outcome: RunOutcome) => {
          m.runsActive.dec();
          runChild(mode, outcome).inc();
          runDurationChild(mode).observe((performance.now() - started) / 1000);
        };
      },
      streamsOpen: { inc: (v) => m.streamsOpen.inc(v), dec: (v) => m.streamsOpen.dec(v) },
      firstToken: (seconds) => m.firstToken.observe(seconds),
      tokens(model, prompt, completion) {
        if (prompt <= 0 && completion <= 0) return;
        const label = modelLabel(model);
        if (prompt > 0) tokenChild(label, 'prompt').inc(prompt);
        if (completion > 0) tokenChild(label, 'completion').inc(completion);
      },
    },
    gateway: {
      connections: (endpoint: GatewayEndpoint) => connectionChild(endpoint),
      frames: (endpoint: GatewayEndpoint, direction) => frameChild(endpoint, direction),
    },
    nodeTools: {
      call(outcome, seconds) {
        const child = toolChild(outcome);
        child.count.inc();
        child.duration.observe(seconds);
      },
    },
    hitl: {
      requested: () => m.approvalsRequested.inc(),
      resolved: (outcome) => approvalChild(outcome).inc(),
    },
    bus: {
      published: (kind: BusKind) => publishedChild(kind),
      received: (kind: BusKind) => receivedChild(kind),
      request: (outcome, seconds) => requestChild(outcome).observe(seconds),
    },
    jobs: {
      added: (queue) => m.jobsAdded.labels(queue).inc(),
      finished(queue, outcome, seconds) {
        m.jobs.labels(queue, outcome).inc();
        m.jobDuration.labels(queue).observe(seconds);
      },
      watchDepth(queues, counts) {
        for (const queue of queues) if (!depthSources.has(queue)) depthSources.set(queue, counts);
      },
    },
    knowledge: {
      ingested(chunks) {
        m.ingestedDocuments.inc();
        if (chunks > 0) m.ingestedChunks.inc(chunks);
      },
      failed: () => m.ingestFailures.inc(),
    },
    retention: {
      removed: (kind, count) => m.retentionRemoved.labels(kind).inc(count),
      swept: (outcome, seconds) => m.retentionSweeps.labels(outcome).observe(seconds),
    },
    limits: {
      refused: (limit) => m.rateLimited.labels(limit).inc(),
    },
    operator: {
      refused: (reason) => m.operatorRefused.labels(reason).inc(),
    },
    async render() {
      const [own, node] = await Promise.all([registry.metrics(), runtime.metrics()]);
      return { contentType: registry.contentType, body: `${own}\n${node}` };
    },
  };
}

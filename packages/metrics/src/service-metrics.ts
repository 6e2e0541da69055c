import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
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

  new Gauge({
    name: 'build_info',
    help: 'Always 1; the running version and the commit it was built from',
    labelNames: ['version', 'commit'] as const,
    registers,
  })
    .labels(options.build?.version ?? 'unknown', options.build?.commit ?? 'unknown')
    .set(1);

  const httpDuration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'HTTP requests by method, route template and status, from arrival to the end of the answer',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  // route → (method index * 1000 + status) → child: two lookups, no string built per request.
  const httpChildren = new Map<string, Map<number, { observe(v: number): void }>>();

  const runs = new Counter({
    name: 'agent_runs_total',
    help: 'Agent runs by mode and outcome (done, error, aborted, suspended)',
    labelNames: ['mode', 'outcome'] as const,
    registers,
  });
  const runDuration = new Histogram({
    name: 'agent_run_duration_seconds',
    help: 'Agent run duration by mode, from the session event to done or error',
    labelNames: ['mode'] as const,
    buckets: RUN_BUCKETS,
    registers,
  });
  const runsActive = new Gauge({
    name: 'agent_runs_active',
    help: 'Agent runs executing in this process',
    registers,
  });
  const streamsOpen = new Gauge({
    name: 'agent_streams_open',
    help: 'Server-sent event streams of agent runs open on this replica',
    registers,
  });
  const firstToken = new Histogram({
    name: 'model_time_to_first_token_seconds',
    help: 'Seconds from a model request to its first streamed chunk',
    buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
    registers,
  });
  const tokens = new Counter({
    name: 'model_tokens_total',
    help:
      `Tokens reported by model providers, by model (the first ${MAX_MODEL_LABELS} model ` +
      `names seen, then "${OTHER_MODEL}") and kind (prompt, completion)`,
    labelNames: ['model', 'kind'] as const,
    registers,
  });
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

  const rateLimited = new Counter({
    name: 'rate_limited_total',
    help: 'Requests, runs and WebSocket frames refused by a limit, by limit (docs/limits.md)',
    labelNames: ['limit'] as const,
    registers,
  });

  const connections = new Gauge({
    name: 'gateway_connections',
    help: 'Open WebSocket connections of this gateway replica by endpoint',
    labelNames: ['endpoint'] as const,
    registers,
  });
  const frames = new Counter({
    name: 'gateway_frames_total',
    help: 'WebSocket frames by endpoint and direction (in: from clients, out: to clients)',
    labelNames: ['endpoint', 'direction'] as const,
    registers,
  });

  const toolCalls = new Counter({
    name: 'node_tool_calls_total',
    help: 'Tool calls to nodes through the gateway by outcome',
    labelNames: ['outcome'] as const,
    registers,
  });
  const toolDuration = new Histogram({
    name: 'node_tool_call_duration_seconds',
    help: 'Node tool call round trip (caller, bus, gateway, node and back) by outcome',
    labelNames: ['outcome'] as const,
    buckets: CALL_BUCKETS,
    registers,
  });

  const approvalsRequested = new Counter({
    name: 'hitl_approvals_requested_total',
    help: 'Tool calls held for a human decision',
    registers,
  });
  const approvals = new Counter({
    name: 'hitl_approvals_total',
    help: 'Held tool calls by outcome (approved, edited, rejected, timed_out, cancelled)',
    labelNames: ['outcome'] as const,
    registers,
  });

  const busPublished = new Counter({
    name: 'bus_messages_published_total',
    help: 'Messages this process published on the bus by kind (message, request, reply)',
    labelNames: ['kind'] as const,
    registers,
  });
  const busReceived = new Counter({
    name: 'bus_messages_received_total',
    help: 'Bus messages handed to a subscriber or responder of this process by kind',
    labelNames: ['kind'] as const,
    registers,
  });
  const busRequests = new Histogram({
    name: 'bus_request_duration_seconds',
    help: 'Bus request/reply latency by outcome',
    labelNames: ['outcome'] as const,
    buckets: CALL_BUCKETS,
    registers,
  });

  const jobsAdded = new Counter({
    name: 'jobs_added_total',
    help: 'Jobs enqueued by this process by queue',
    labelNames: ['queue'] as const,
    registers,
  });
  const jobs = new Counter({
    name: 'jobs_total',
    help: 'Job attempts run by this process by queue and outcome (completed, failed)',
    labelNames: ['queue', 'outcome'] as const,
    registers,
  });
  const jobDuration = new Histogram({
    name: 'job_duration_seconds',
    help: 'Job attempt duration by queue',
    labelNames: ['queue'] as const,
    buckets: JOB_BUCKETS,
    registers,
  });
  const depthSources = new Map<string, (queue: string) => Promise<QueueCounts>>();
  new Gauge({
    name: 'jobs_queue_depth',
    help: 'Jobs in a queue by state, read from the job engine at each scrape (BullMQ only)',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
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

  const ingestedDocuments = new Counter({
    name: 'knowledge_documents_ingested_total',
    help: 'Knowledge-base documents ingested (split, embedded, stored)',
    registers,
  });
  const ingestedChunks = new Counter({
    name: 'knowledge_chunks_ingested_total',
    help: 'Chunks stored by knowledge-base ingestion',
    registers,
  });
  const ingestFailures = new Counter({
    name: 'knowledge_ingestion_failures_total',
    help: 'Failed knowledge-base ingestion attempts',
    registers,
  });
  const retentionRemoved = new Counter({
    name: 'retention_removed_total',
    help: 'Rows deleted by the retention sweep by kind (sessions, task_runs, knowledge_documents, memories, audit_events), and sandboxes destroyed with their sessions (sandboxes)',
    labelNames: ['kind'] as const,
    registers,
  });
  const retentionSweeps = new Histogram({
    name: 'retention_sweep_duration_seconds',
    help: 'Duration of a retention sweep of this worker, by outcome (ok, failed)',
    labelNames: ['outcome'] as const,
    buckets: JOB_BUCKETS,
    registers,
  });
  const operatorRefused = new Counter({
    name: 'operator_auth_failures_total',
    help: 'Requests to the operator API refused at the credential, by reason (missing, wrong)',
    labelNames: ['reason'] as const,
    registers,
  });

  const bound = <C>(make: (...labels: string[]) => C) => {
    const cache = new Map<string, C>();
    return (...labels: string[]): C => {
      const key = labels.length === 1 ? labels[0]! : labels.join('\u0000');
      let child = cache.get(key);
      if (!child) cache.set(key, (child = make(...labels)));
      return child;
    };
  };
  const connectionChild = bound<Level>((endpoint) => connections.labels(endpoint));
  const frameChild = bound<Count>((endpoint, direction) => frames.labels(endpoint, direction));
  const publishedChild = bound<Count>((kind) => busPublished.labels(kind));
  const receivedChild = bound<Count>((kind) => busReceived.labels(kind));
  const requestChild = bound((outcome) => busRequests.labels(outcome));
  const toolChild = bound((outcome) => ({
    count: toolCalls.labels(outcome),
    duration: toolDuration.labels(outcome),
  }));
  const approvalChild = bound((outcome) => approvals.labels(outcome));
  const runChild = bound((mode, outcome) => runs.labels(mode, outcome));
  const tokenChild = bound((model, kind) => tokens.labels(model, kind));
  const runDurationChild = bound((mode) => runDuration.labels(mode));

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
          child = httpDuration.labels(METHODS[methodIndex] ?? 'other', route, String(status));
          byRoute.set(key, child);
        }
        child.observe(seconds);
      },
    },
    agent: {
      runStarted(mode) {
        const started = performance.now();
        runsActive.inc();
        return (outcome: RunOutcome) => {
          runsActive.dec();
          runChild(mode, outcome).inc();
          runDurationChild(mode).observe((performance.now() - started) / 1000);
        };
      },
      streamsOpen: { inc: (v) => streamsOpen.inc(v), dec: (v) => streamsOpen.dec(v) },
      firstToken: (seconds) => firstToken.observe(seconds),
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
      requested: () => approvalsRequested.inc(),
      resolved: (outcome) => approvalChild(outcome).inc(),
    },
    bus: {
      published: (kind: BusKind) => publishedChild(kind),
      received: (kind: BusKind) => receivedChild(kind),
      request: (outcome, seconds) => requestChild(outcome).observe(seconds),
    },
    jobs: {
      added: (queue) => jobsAdded.labels(queue).inc(),
      finished(queue, outcome, seconds) {
        jobs.labels(queue, outcome).inc();
        jobDuration.labels(queue).observe(seconds);
      },
      watchDepth(queues, counts) {
        for (const queue of queues) if (!depthSources.has(queue)) depthSources.set(queue, counts);
      },
    },
    knowledge: {
      ingested(chunks) {
        ingestedDocuments.inc();
        if (chunks > 0) ingestedChunks.inc(chunks);
      },
      failed: () => ingestFailures.inc(),
    },
    retention: {
      removed: (kind, count) => retentionRemoved.labels(kind).inc(count),
      swept: (outcome, seconds) => retentionSweeps.labels(outcome).observe(seconds),
    },
    limits: {
      refused: (limit) => rateLimited.labels(limit).inc(),
    },
    operator: {
      refused: (reason) => operatorRefused.labels(reason).inc(),
    },
    async render() {
      const [own, node] = await Promise.all([registry.metrics(), runtime.metrics()]);
      return { contentType: registry.contentType, body: `${own}\n${node}` };
    },
  };
}

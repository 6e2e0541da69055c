import { context, propagation, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { createSampler, type TracesSamplerName } from './sampler.js';

/** `service.instance.id` (still incubating in the semantic conventions, so spelled here). */
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id';

export interface StartTracingOptions {
  /** The collector's base URL; unset: tracing stays off and nothing is registered. */
  endpoint: string | undefined;
  /** `service.name`, e.g. `agent-backend-api`. */
  serviceName: string;
  /** `service.instance.id`: the config's instance id. */
  instanceId: string;
  /** How long finished spans wait to be exported in one batch. @default 5000 */
  scheduleDelayMs?: number;
  /** `OTEL_TRACES_SAMPLER`. @default 'parentbased_always_on' */
  sampler?: TracesSamplerName;
  /** `OTEL_TRACES_SAMPLER_ARG`: the ratio of the `traceidratio` samplers. @default 1 */
  samplerRatio?: number;
}

/** Tracing of one process, as {@link startTracing} left it. */
export interface Tracing {
  /** Whether a provider is registered (spans are recorded and exported). */
  readonly enabled: boolean;
  /** The tracer for the process's own spans; the API's no-op tracer when off. */
  readonly tracer: Tracer;
  /** Exports what is still buffered and unregisters the provider; idempotent. */
  close(): Promise<void>;
}

const OFF: Tracing = {
  enabled: false,
  tracer: trace.getTracer('agent-backend'),
  close: () => Promise.resolve(),
};

/**
 * Turns OpenTelemetry tracing on for this process when an OTLP endpoint is configured: a tracer
 * provider with a batch processor and the OTLP/HTTP (JSON) exporter, the async-local-storage
 * context manager (so a span started in a request is the parent of what the request awaits) and
 * the W3C trace-context propagator (`traceparent`/`tracestate`), all registered globally, so the
 * packages that create spans only use `@opentelemetry/api`. Off: nothing is registered, the API
 * answers with its no-op tracer, and nothing of the SDK runs.
 *
 * The exporter reads its standard variables itself (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, ...); the sampler comes from the options (see
 * {@link createSampler}). A span the sampler drops is a non-recording span: it carries its
 * context to its children and across processes, and is neither recorded nor exported.
 */
export function startTracing(options: StartTracingOptions): Tracing {
  if (!options.endpoint) return OFF;
  // Export failures (the collector down) are dropped: traces are best effort.
  const processor = new BatchSpanProcessor({
    exporter: new OTLPTraceExporter(),
    scheduledDelayMillis: options.scheduleDelayMs ?? 5_000,
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: '0.1.0',
      [ATTR_SERVICE_INSTANCE_ID]: options.instanceId,
    }),
    spanProcessors: [processor],
    sampler: createSampler(options.sampler ?? 'parentbased_always_on', options.samplerRatio ?? 1),
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);

  let closing: Promise<void> | undefined;
  return {
    enabled: true,
    tracer: trace.getTracer('agent-backend'),
    close() {
      closing ??= provider.shutdown().finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      });
      return closing;
    },
  };
}

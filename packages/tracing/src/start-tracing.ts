import { context, propagation, trace, type Tracer } from '@opentelemetry/api';

/** `service.instance.id` (still incubating in the semantic conventions, so spelled here). */
const ATTR_SERVICE_INSTANCE_ID = 'service.instance.id';

export interface StartTracingOptions {
  /** The collector's base URL; unset: tracing stays off and nothing is loaded or registered. */
  endpoint: string | undefined;
  /** `service.name`, e.g. `agent-backend-api`. */
  serviceName: string;
  /** `service.instance.id`: the config's instance id. */
  instanceId: string;
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
 * Turns OpenTelemetry tracing on for this process when an OTLP endpoint is configured, with the
 * Node.js SDK (`@opentelemetry/sdk-node`): a tracer provider whose batch processor and OTLP
 * exporter the SDK builds from the standard variables (`OTEL_EXPORTER_OTLP_*` with the protocol,
 * `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER` and `_ARG`), the async-local-storage context manager (so a
 * span started in a request is the parent of what the request awaits) and the W3C trace-context
 * propagator (`traceparent`/`tracestate`), all registered globally, so the packages that create
 * spans only use `@opentelemetry/api`. Nothing else of the SDK runs: no metrics or logs
 * pipeline (metrics are Prometheus's, logs are pino's), no instrumentation.
 *
 * Off: the SDK is not even loaded (it is imported here, on demand), nothing is registered, and
 * the API answers with its no-op tracer.
 */
export async function startTracing(options: StartTracingOptions): Promise<Tracing> {
  if (!options.endpoint) return OFF;
  const [
    { NodeSDK },
    { resourceFromAttributes, envDetector, hostDetector },
    { W3CTraceContextPropagator },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': '0.1.0',
      [ATTR_SERVICE_INSTANCE_ID]: options.instanceId,
    }),
    // The host's name and `OTEL_RESOURCE_ATTRIBUTES`; not the SDK's default set, whose process
    // detector copies the command line (it can carry secrets) and whose instance detector
    // replaces the instance id above with a random one.
    resourceDetectors: [hostDetector, envDetector],
    textMapPropagator: new W3CTraceContextPropagator(),
    // Without these the SDK would start OTLP metrics and logs exporters of its own.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();

  let closing: Promise<void> | undefined;
  return {
    enabled: true,
    tracer: trace.getTracer('agent-backend'),
    close() {
      // Export failures (the collector down) are dropped: traces are best effort.
      closing ??= sdk.shutdown().finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      });
      return closing;
    },
  };
}

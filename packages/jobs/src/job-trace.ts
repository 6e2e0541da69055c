import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
} from '@opentelemetry/api';

/**
 * The W3C trace context (`traceparent`, `tracestate`) a job carries in its data as `trace`, so
 * the worker's span continues the trace of the request that queued it (docs/operations.md,
 * "Traces"). Job schemas validate it with `TraceCarrier` of `@agent-backend/protocol`.
 */
type TraceCarrier = Record<string, string>;

/**
 * The active span's trace context, to put in a job's data; undefined when tracing is off or no
 * span is active. An unsampled span's context is carried too, so the worker follows the
 * request's decision not to sample.
 */
export function jobTraceContext(): TraceCarrier | undefined {
  const span = trace.getActiveSpan();
  if (!span || !trace.isSpanContextValid(span.spanContext())) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

const tracer = trace.getTracer('@agent-backend/jobs');

/**
 * Runs a job's handler inside a consumer span named `name`, the child of the span that queued
 * the job (its `carried` context) or of the active context when the job carries none. Off (the
 * API's no-op tracer): `handler` runs as it is. Not sampled: the context still travels, so the
 * handler's own spans are not sampled either.
 */
export function inJobSpan<T>(
  name: string,
  carried: TraceCarrier | undefined,
  attributes: Attributes,
  handler: () => Promise<T>,
): Promise<T> {
  const parent = carried ? propagation.extract(ROOT_CONTEXT, carried) : context.active();
  const span = tracer.startSpan(name, { kind: SpanKind.CONSUMER }, parent);
  if (!trace.isSpanContextValid(span.spanContext())) return handler();
  if (!span.isRecording()) return context.with(trace.setSpan(parent, span), handler);
  // Attributes only on spans that record: the SDK copies start attributes before it samples.
  span.setAttributes(attributes);
  return context.with(trace.setSpan(parent, span), handler).then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name });
      span.end();
      throw error;
    },
  );
}

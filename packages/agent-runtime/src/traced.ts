import { context, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

/** The API's tracer: the no-op one unless the process registered a provider (tracing on). */
const tracer = trace.getTracer('@agent-backend/agent-runtime');

/**
 * `fn(...args)` inside a span named `name`: the active span while it runs (so what it starts
 * and logs belongs to it), ended when its promise settles, marked as an error when it rejects.
 * Off (the no-op tracer): `fn` is called directly, no context switch and no closure. Not
 * sampled: `fn` runs inside the non-recording span, so what it starts is not sampled either,
 * and nothing waits for its promise.
 */
export function traced<A extends unknown[], R>(
  name: string,
  attributes: Attributes,
  fn: (...args: A) => Promise<R>,
  ...args: A
): Promise<R> {
  // Attributes only on a span that records: given at the start, the SDK copies them before it
  // asks the sampler.
  const span = tracer.startSpan(name);
  if (!span.isRecording()) {
    if (!trace.isSpanContextValid(span.spanContext())) return fn(...args);
    return context.with(trace.setSpan(context.active(), span), fn, undefined, ...args);
  }
  span.setAttributes(attributes);
  return context.with(trace.setSpan(context.active(), span), fn, undefined, ...args).then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'error' });
      span.end();
      throw error;
    },
  );
}

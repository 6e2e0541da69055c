import {
  context,
  propagation,
  TraceFlags,
  trace,
  type Context,
  type Span,
  type SpanKind,
  type Tracer,
} from '@opentelemetry/api';

/**
 * The spans of a tool call's hops (the caller's client span, the gateway replica's server span)
 * when the trace they belong to is not sampled: none. A span of an unsampled trace records
 * nothing, and neither of these is made active (no log line takes its ids), so creating one only
 * cost the SDK's work: two random ids as hex, the sampler, a new context for the injected
 * `traceparent`, the id checks and the parse at the gateway (docs/BENCHMARKS.md, "Metrics and
 * traces on vs off", run J). The trace's own context still travels to the gateway, with its
 * "not sampled" flag, so the gateway follows the caller's decision instead of sampling afresh.
 */

/** The span `parent` holds when it records nothing and its trace is not sampled. */
function unsampled(parent: Context): Span | undefined {
  const span = trace.getSpan(parent);
  if (!span || span.isRecording()) return undefined;
  const spanContext = span.spanContext();
  return (spanContext.traceFlags & TraceFlags.SAMPLED) === 0 &&
    trace.isSpanContextValid(spanContext)
    ? span
    : undefined;
}

/**
 * A span for a hop of the call under the active context: the active span itself when it records
 * nothing and its trace is not sampled (ending it or setting its status does nothing), else a
 * new span from `tracer` (the no-op tracer's when tracing is off).
 */
export function startCallSpan(tracer: Tracer, name: string, kind: SpanKind): Span {
  return unsampled(context.active()) ?? tracer.startSpan(name, { kind });
}

/** The context to carry to the next hop: `span`'s, which may be the active one itself. */
export function injectCallSpan(span: Span, carrier: Record<string, string>): void {
  const active = context.active();
  propagation.inject(
    trace.getSpan(active) === span ? active : trace.setSpan(active, span),
    carrier,
  );
}

/**
 * Whether a carried W3C `traceparent` says "not sampled" (`00-<trace>-<parent>-<flags>`, the
 * sampled bit clear), read from the text without parsing the carrier. Other propagators'
 * headers are not read here: for them the gateway starts its span as before.
 */
export function carriesUnsampled(carrier: Readonly<Record<string, string>>): boolean {
  const header = carrier.traceparent;
  if (typeof header !== 'string' || header.length !== 55 || header[52] !== '-') return false;
  const flags = Number.parseInt(header.slice(53), 16);
  return Number.isInteger(flags) && (flags & TraceFlags.SAMPLED) === 0;
}

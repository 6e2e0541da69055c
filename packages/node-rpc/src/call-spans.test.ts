import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  trace,
  TraceFlags,
  type Context,
  type ContextManager,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { carriesUnsampled, injectCallSpan, startCallSpan } from './call-spans.js';

const TRACE = 'a'.repeat(31) + '1';
const PARENT = 'b'.repeat(15) + '2';

/** Synchronous scopes are all these tests need of a context manager. */
class StackContextManager implements ContextManager {
  private stack: Context[] = [];
  active(): Context {
    return this.stack.at(-1) ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    scope: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    this.stack.push(scope);
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.stack.pop();
    }
  }
  bind<T>(_scope: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.stack = [];
    return this;
  }
}

/** The W3C `traceparent` as the SDK's propagator writes it (injection only). */
const traceparentOnly: TextMapPropagator = {
  inject(scope, carrier, setter) {
    const span = trace.getSpanContext(scope);
    if (span) {
      const flags = (span.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
      setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-${flags}`);
    }
  },
  extract: (scope) => scope,
  fields: () => ['traceparent'],
};

/** A tracer whose spans are the parent's context with a new span id, counted. */
function countingTracer(): Tracer & { started: string[] } {
  const started: string[] = [];
  return {
    started,
    startSpan(name: string): Span {
      started.push(name);
      return trace.wrapSpanContext({
        traceId: TRACE,
        spanId: 'c'.repeat(15) + String(started.length),
        traceFlags: TraceFlags.SAMPLED,
      });
    },
    startActiveSpan: () => {
      throw new Error('not used');
    },
  } as Tracer & { started: string[] };
}

const under = <T>(flags: TraceFlags, fn: () => T): T =>
  context.with(
    trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: PARENT, traceFlags: flags }),
    fn,
  );

describe('call spans', () => {
  beforeAll(() => {
    context.setGlobalContextManager(new StackContextManager());
    propagation.setGlobalPropagator(traceparentOnly);
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  it('starts no span under a trace that is not sampled, and carries that trace on unsampled', () => {
    const tracer = countingTracer();
    const carrier: Record<string, string> = {};
    under(TraceFlags.NONE, () => {
      const span = startCallSpan(tracer, 'node-rpc tools/call', SpanKind.CLIENT);
      expect(span.spanContext().spanId).toBe(PARENT);
      injectCallSpan(span, carrier);
    });
    expect(tracer.started).toEqual([]);
    expect(carrier.traceparent).toBe(`00-${TRACE}-${PARENT}-00`);
    expect(carriesUnsampled(carrier)).toBe(true);
  });

  it('starts a span under a sampled trace and carries the new span as the parent', () => {
    const tracer = countingTracer();
    const carrier: Record<string, string> = {};
    under(TraceFlags.SAMPLED, () => {
      injectCallSpan(startCallSpan(tracer, 'node-rpc tools/call', SpanKind.CLIENT), carrier);
    });
    expect(tracer.started).toEqual(['node-rpc tools/call']);
    expect(carrier.traceparent).toBe(`00-${TRACE}-${'c'.repeat(15)}1-01`);
    expect(carriesUnsampled(carrier)).toBe(false);
  });

  it('starts a span where no trace is active (the tracer decides)', () => {
    const tracer = countingTracer();
    startCallSpan(tracer, 'gateway tools/call', SpanKind.SERVER);
    expect(tracer.started).toEqual(['gateway tools/call']);
  });

  it('reads the sampled bit of a W3C traceparent and nothing else', () => {
    const header = (flags: string) => ({ traceparent: `00-${TRACE}-${PARENT}-${flags}` });
    expect(carriesUnsampled(header('00'))).toBe(true);
    expect(carriesUnsampled(header('02'))).toBe(true);
    expect(carriesUnsampled(header('01'))).toBe(false);
    expect(carriesUnsampled(header('03'))).toBe(false);
    expect(carriesUnsampled({})).toBe(false);
    expect(carriesUnsampled({ b3: `${TRACE}-${PARENT}-0` })).toBe(false);
    expect(carriesUnsampled({ traceparent: `00-${TRACE}-${PARENT}-0` })).toBe(false);
  });
});

import { ROOT_CONTEXT, trace, TraceFlags, type Context } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { createSampler, type TracesSamplerName } from './sampler.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const remoteParent = (sampled: boolean): Context =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: '00f067aa0ba902b7',
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });

let provider: TracerProvider | undefined;
afterEach(() => provider?.shutdown());

/** A tracer with `name`/`ratio`'s sampler and what it exported. */
function tracerWith(name: TracesSamplerName, ratio: number) {
  const exporter = new InMemorySpanExporter();
  provider = new TracerProvider({
    sampler: createSampler(name, ratio),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { tracer: provider.getTracer('test'), exporter };
}

describe('createSampler: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG', () => {
  it('parentbased_traceidratio at 0: no new trace is recorded or exported, a sampled parent is', () => {
    const { tracer, exporter } = tracerWith('parentbased_traceidratio', 0);
    for (let i = 0; i < 100; i++) {
      const root = tracer.startSpan('root');
      expect(root.isRecording()).toBe(false);
      // The span still has a context to hand on, marked not sampled.
      expect(trace.isSpanContextValid(root.spanContext())).toBe(true);
      expect(root.spanContext().traceFlags & TraceFlags.SAMPLED).toBe(0);
      root.end();
    }
    tracer.startSpan('unsampled caller', {}, remoteParent(false)).end();
    expect(exporter.getFinishedSpans()).toHaveLength(0);

    const child = tracer.startSpan('sampled caller', {}, remoteParent(true));
    expect(child.isRecording()).toBe(true);
    child.end();
    expect(exporter.getFinishedSpans().map((s) => s.spanContext().traceId)).toEqual([TRACE_ID]);
  });

  it('parentbased_traceidratio at 1 and the default keep new traces; always_off keeps none', () => {
    expect(tracerWith('parentbased_traceidratio', 1).tracer.startSpan('a').isRecording()).toBe(
      true,
    );
    expect(tracerWith('parentbased_always_on', 0).tracer.startSpan('a').isRecording()).toBe(true);
    const off = tracerWith('always_off', 1).tracer;
    expect(off.startSpan('a', {}, remoteParent(true)).isRecording()).toBe(false);
  });

  it('traceidratio keeps about its ratio of trace ids, whatever the parent says', () => {
    const { tracer } = tracerWith('traceidratio', 0.5);
    let kept = 0;
    for (let i = 0; i < 2000; i++) if (tracer.startSpan('s').isRecording()) kept++;
    expect(kept).toBeGreaterThan(800);
    expect(kept).toBeLessThan(1200);
    const always = tracerWith('always_on', 0).tracer;
    expect(always.startSpan('a', {}, remoteParent(false)).isRecording()).toBe(true);
  });
});

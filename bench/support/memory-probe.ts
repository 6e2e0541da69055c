/**
 * The instrument of the idle-connection benchmarks: a preload (`--import PRELOAD`, with
 * `--expose-gc`) that, on an IPC request, answers with the event-loop delay since the previous
 * request and `process.memoryUsage()` (after two full GCs when asked). It is the measuring
 * instrument, nothing the measured server does itself. The forced GC's own pause is left out of
 * the next delay figure.
 */
import type { ChildProcess } from 'node:child_process';
import { procMemory } from './processes.js';

export const PRELOAD = `data:text/javascript,${encodeURIComponent(
  [
    `import { monitorEventLoopDelay } from 'node:perf_hooks';`,
    `const delay = monitorEventLoopDelay({ resolution: 10 }); delay.enable();`,
    `process.on('message', (m) => {`,
    `  if (m !== 'bench:memory' && m !== 'bench:memory-gc') return;`,
    `  const loop = { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 };`,
    `  if (m === 'bench:memory-gc') { globalThis.gc(); globalThis.gc(); }`,
    `  const memory = process.memoryUsage(); delay.reset();`,
    `  process.send({ memory, loop });`,
    `});`,
  ].join('\n'),
)}`;

export interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

export interface MemorySample {
  memory: Memory;
  /** Event-loop delay of the server since the previous sample, ms. */
  loop: { p99: number; max: number };
}

/** The next IPC message of `child` that `match`es; rejects after `timeoutMs`. */
export function nextMessage<T>(
  child: ChildProcess,
  match: (m: Record<string, unknown>) => boolean,
  timeoutMs: number,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', on);
      reject(new Error(`no answer from pid ${child.pid} within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (m: Record<string, unknown>) => {
      if (!match(m)) return;
      clearTimeout(timer);
      child.off('message', on);
      resolve(m as T);
    };
    child.on('message', on);
  });
}

/** One sample of a server started with {@link PRELOAD}; RSS from /proc. `gc`: after full GCs. */
export async function sampleMemory(server: ChildProcess, gc = true): Promise<MemorySample> {
  const answer = nextMessage<MemorySample>(server, (m) => 'memory' in m, 30_000);
  server.send(gc ? 'bench:memory-gc' : 'bench:memory');
  const { memory, loop } = await answer;
  return { memory: { ...memory, rss: procMemory(server.pid!, 'VmRSS') }, loop };
}

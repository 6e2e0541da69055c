/**
 * What the metrics cost on a hot path, in isolation: nanoseconds per call of each instrument the
 * HTTP layer, a node tool call and the bus make (prom-client 15 children bound once by
 * `createServiceMetrics`), and the decorators of the bus around an in-process request/reply,
 * against the same request/reply without them. No I/O, so there is nothing to be noisy but the
 * CPU; the end-to-end figure is bench/http-stack.ts.
 *
 *   node --import tsx bench/metrics-instruments.ts     # CALLS (default 1,000,000), ROUNDS (5)
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createMemoryBus, createMemoryHub, type Bus } from '../packages/bus/src/index.js';
import { instrumentBus } from '../packages/engines/src/instrument.js';
import { createServiceMetrics, UNMATCHED_ROUTE } from '../packages/metrics/src/index.js';

const CALLS = Number(process.env.CALLS ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const metrics = createServiceMetrics();

/** Median ns per call of `fn` over the rounds. */
function time(fn: (i: number) => void, calls = CALLS): number {
  for (let i = 0; i < calls / 10; i++) fn(i);
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) fn(i);
    perCall.push(((performance.now() - started) * 1e6) / calls);
  }
  return perCall.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

async function timeAsync(fn: () => Promise<unknown>, calls: number): Promise<number> {
  for (let i = 0; i < calls / 10; i++) await fn();
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) await fn();
    perCall.push(((performance.now() - started) * 1e6) / calls);
  }
  return perCall.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
}

const frames = metrics.gateway.frames('desktop', 'in');
const published = metrics.bus.published('request');
const rows: Array<[string, number]> = [
  [
    'http.request (route, method and status known)',
    time((i) => metrics.http.request('GET', '/api/auth/whoami', 200, (i % 50) / 1000)),
  ],
  [
    'http.request (unmatched)',
    time((i) => metrics.http.request('GET', UNMATCHED_ROUTE, 404, (i % 50) / 1000)),
  ],
  [
    'nodeTools.call (counter + histogram)',
    time((i) => metrics.nodeTools.call('ok', (i % 50) / 1000)),
  ],
  ['bus.request (histogram)', time((i) => metrics.bus.request('ok', (i % 50) / 1000))],
  [
    'counter child inc (bus published, gateway frames)',
    time(() => (published.inc(), frames.inc())) / 2,
  ],
];

// The bus decorators around an in-process request/reply.
const hub = createMemoryHub();
const plainA = createMemoryBus({ hub, nodeId: 'a' });
const plainB = createMemoryBus({ hub, nodeId: 'b' });
await plainB.respond('echo', (m) => m);
const hub2 = createMemoryHub();
const measuredA: Bus = instrumentBus(createMemoryBus({ hub: hub2, nodeId: 'a' }), metrics.bus);
const measuredB: Bus = instrumentBus(createMemoryBus({ hub: hub2, nodeId: 'b' }), metrics.bus);
await measuredB.respond('echo', (m) => m);
const requests = Math.max(1000, Math.floor(CALLS / 20));
const plain = await timeAsync(() => plainA.request('echo', 1, { timeoutMs: 1000 }), requests);
const measured = await timeAsync(() => measuredA.request('echo', 1, { timeoutMs: 1000 }), requests);
await Promise.all([plainA, plainB, measuredA, measuredB].map((b) => b.close()));

console.log(
  `# metrics-instruments: node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ` +
    `load ${loadavg()[0]!.toFixed(2)}, ${CALLS} calls × ${ROUNDS} rounds (medians)\n`,
);
console.log('| instrument | ns per call |\n| --- | ---: |');
for (const [name, ns] of rows) console.log(`| ${name} | ${ns.toFixed(0)} |`);
console.log(
  `\n| in-process bus request/reply | µs per request | ratio |\n| --- | ---: | ---: |\n` +
    `| plain | ${(plain / 1000).toFixed(2)} | 1.00× |\n` +
    `| with instrumentBus on both nodes | ${(measured / 1000).toFixed(2)} | ${(measured / plain).toFixed(2)}× |`,
);

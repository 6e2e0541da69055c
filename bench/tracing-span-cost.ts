/**
 * What one traced HTTP request costs the OpenTelemetry SDK itself, in isolation: CPU µs per
 * request of the service's own request middleware (`traceRequests` of @agent-backend/http-server:
 * extract the W3C context, start the server span, run the handler in its context, name it and
 * end it) with nothing else around it, in three processes:
 *
 * - **off**: `startTracing` without an endpoint (the API's no-op tracer: the baseline);
 * - **on**: `startTracing` as the service starts it (`@opentelemetry/sdk-node`, batch
 *   processor, OTLP/HTTP protobuf export to a sink on loopback, in a process of its own and not
 *   counted), every span recorded and exported;
 * - **unsampled**: the same with `OTEL_TRACES_SAMPLER=parentbased_traceidratio` and
 *   `OTEL_TRACES_SAMPLER_ARG=0`: the floor every request pays once tracing is on.
 *
 * The CPU of "on" includes exporting every span: the batch is flushed before the clock stops,
 * and the queue is large enough that no span is dropped. The figure is the lower bound of what
 * tracing adds to a request of the running service, whose own CPU per request is measured by
 * bench/http-stack.ts; the handler here does nothing but await.
 *
 *   node --import tsx bench/tracing-span-cost.ts      # REQUESTS (default 200,000), ROUNDS (5)
 */
import { execFileSync, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { traceRequests } from '../packages/http-server/src/trace-requests.js';
import { startTracing } from '../packages/tracing/src/index.js';

const REQUESTS = Number(process.env.REQUESTS ?? 200_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const MODES = {
  off: {},
  on: {},
  unsampled: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
} as const;
type Mode = keyof typeof MODES;

/** In a child: `REQUESTS` requests through the middleware; prints µs of CPU per request. */
async function measureOne(mode: Mode, sink: string) {
  const tracing = await startTracing({
    endpoint: mode === 'off' ? undefined : sink,
    serviceName: 'bench',
    instanceId: 'bench-1',
  });
  const middleware = traceRequests(tracing.tracer);
  type Req = Parameters<typeof middleware>[0];
  type Res = Parameters<typeof middleware>[1];
  const headers = { host: '127.0.0.1', authorization: 'Bearer x', accept: '*/*' };
  const handler = async () => {
    await null;
  };
  /** One request: the middleware, an async handler in the span's context, the response closing. */
  const request = async () => {
    const res = Object.assign(new EventEmitter(), {
      locals: {} as Record<string, unknown>,
      statusCode: 200,
      writableFinished: true,
    });
    let done: Promise<void> | undefined;
    middleware({ method: 'GET', headers } as Req, res as unknown as Res, () => {
      done = handler();
    });
    await done;
    res.locals.route = '/api/auth/whoami';
    res.emit('close');
  };
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await request();
      // Lets the exporter's sockets and timers run, as a server's event loop would.
      if (i % 64 === 63) await yieldToLoop();
    }
  };
  // Warm-up, then time for its spans to be exported (the batch delay is 100 ms).
  await run(REQUESTS / 10);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = process.cpuUsage();
  await run(REQUESTS);
  // Closing exports what is still batched: every span of the run is sent inside the clock.
  await tracing.close();
  const used = process.cpuUsage(before);
  process.stdout.write(`${(used.user + used.system) / REQUESTS}\n`);
}

if (process.argv[2] === '--child') {
  await measureOne(process.argv[3] as Mode, process.argv[4]!);
  process.exit(0);
}

// The sink: answers every export 200, in a process of its own.
const sink = spawn(
  process.execPath,
  [
    '-e',
    `require('http').createServer((q, s) => q.resume().on('end', () => s.end())).listen(0, '127.0.0.1', function () { console.log(this.address().port) })`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = await new Promise<string>((resolve) =>
  sink.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())),
);
const url = `http://127.0.0.1:${port}`;

console.log(
  `# tracing-span-cost: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `${ROUNDS} rounds × ${REQUESTS} requests per mode`,
);
const results: Record<Mode, number[]> = { off: [], on: [], unsampled: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order = Object.keys(MODES) as Mode[];
  if (round % 2 === 1) order.reverse();
  for (const mode of order) {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', new URL(import.meta.url).pathname, '--child', mode, url],
      {
        env: {
          ...process.env,
          ...MODES[mode],
          // Nothing dropped: every recorded span is exported inside the measurement.
          OTEL_BSP_MAX_QUEUE_SIZE: String(REQUESTS * 2),
          OTEL_BSP_SCHEDULE_DELAY: '100',
        },
        encoding: 'utf8',
      },
    );
    results[mode].push(Number(out.trim()));
  }
}
sink.kill();
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const off = median(results.off);
for (const mode of Object.keys(MODES) as Mode[]) {
  const us = median(results[mode]);
  console.log(
    JSON.stringify({
      mode,
      cpuUsPerRequest: Number(us.toFixed(2)),
      addedUs: Number((us - off).toFixed(2)),
      spread: results[mode].map((v) => Number(v.toFixed(2))),
      ratio: Number((us / off).toFixed(2)),
    }),
  );
}

/**
 * Bus request/reply round trip: in-process hub vs Redis pub/sub, measured in the same run so the
 * ratio is meaningful on whatever machine runs it.
 *
 *   node --import tsx bench/bus-roundtrip.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), ROUNDTRIPS (default 2000), CONCURRENCY
 * (default 64), ROUNDS (default 3; the transports alternate each round and samples are pooled,
 * so drift on a shared machine hits both alike).
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { closeRedis, createRedis } from '../packages/redis/src/index.js';
import {
  createMemoryBus,
  createMemoryHub,
  createRedisBus,
  type Bus,
} from '../packages/bus/src/index.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const roundTrips = Number(process.env.ROUNDTRIPS ?? 2_000);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmUp = 500;
const message = { kind: 'bench', payload: 'x'.repeat(200) };

interface Pair {
  readonly name: string;
  readonly client: Bus;
  readonly server: Bus;
}

async function pair(name: string, make: () => Bus): Promise<Pair> {
  const client = make();
  const server = make();
  await server.respond('echo', (m) => m);
  return { name, client, server };
}

/** Runs `total` requests with `workers` in flight; returns each latency in µs and the wall time. */
async function measure(
  bus: Bus,
  total: number,
  workers: number,
): Promise<{ us: number[]; ms: number }> {
  const us: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next++ < total) {
        const t0 = performance.now();
        await bus.request('echo', message, { timeoutMs: 10_000 });
        us.push((performance.now() - t0) * 1_000);
      }
    }),
  );
  return { us, ms: performance.now() - started };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

interface Row {
  scenario: string;
  transport: string;
  p50: number;
  p99: number;
  rps: number;
}

async function main(): Promise<void> {
  const hub = createMemoryHub();
  const prefix = `bench:${process.pid}:`;
  const pairs = [
    await pair('in-process', () => createMemoryBus({ hub })),
    await pair('Redis', () => createRedisBus({ url: redisUrl, prefix })),
  ];
  const info = createRedis(redisUrl, { name: 'bench-info' });
  const redisVersion = /redis_version:(\S+)/.exec(await info.info('server'))?.[1] ?? '?';
  await closeRedis(info);
  for (const p of pairs) await measure(p.client, warmUp, 1);

  const rows: Row[] = [];
  for (const [scenario, workers] of [
    ['sequential', 1],
    [`concurrency ${concurrency}`, concurrency],
  ] as const) {
    const pooled = new Map<string, { us: number[]; ms: number; n: number }>();
    for (let round = 0; round < rounds; round++) {
      for (const p of round % 2 === 0 ? pairs : [...pairs].reverse()) {
        const { us, ms } = await measure(p.client, roundTrips, workers);
        const acc = pooled.get(p.name) ?? { us: [], ms: 0, n: 0 };
        pooled.set(p.name, { us: acc.us.concat(us), ms: acc.ms + ms, n: acc.n + us.length });
      }
    }
    for (const p of pairs) {
      const { us, ms, n } = pooled.get(p.name)!;
      us.sort((a, b) => a - b);
      const row = { p50: percentile(us, 50), p99: percentile(us, 99), rps: (n / ms) * 1_000 };
      rows.push({ scenario, transport: p.name, ...row });
    }
  }
  await Promise.all(pairs.flatMap((p) => [p.client.close(), p.server.close()]));

  const size = JSON.stringify({
    v: 1,
    k: 'req',
    from: 'x'.repeat(16),
    id: 'zz',
    body: message,
  }).length;
  const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  console.log(
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Redis ${redisVersion} at ${new URL(redisUrl).host}`,
  );
  console.log(
    `request envelope ≈ ${size} bytes; ${rounds} rounds × ${roundTrips} round trips per scenario and transport, after ${warmUp} warm-up\n`,
  );
  console.log(
    '| scenario | transport | p50 (µs) | p99 (µs) | round trips/s | Redis ÷ in-process (p50 / p99 / throughput) |',
  );
  console.log('|---|---|---:|---:|---:|---|');
  for (const row of rows) {
    const base = rows.find((r) => r.scenario === row.scenario && r.transport === 'in-process')!;
    const ratio =
      row === base
        ? 'baseline'
        : `${(row.p50 / base.p50).toFixed(1)}× / ${(row.p99 / base.p99).toFixed(1)}× / ${(row.rps / base.rps).toFixed(2)}×`;
    console.log(
      `| ${row.scenario} | ${row.transport} | ${fmt(row.p50)} | ${fmt(row.p99)} | ${fmt(row.rps)} | ${ratio} |`,
    );
  }
}

await main();

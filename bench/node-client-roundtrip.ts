/**
 * Tool call round trip through a node: the NodeClient (schema validation of every frame, tool
 * lookup and argument checks, task tracking with deadlines, result validation, events) vs a bare
 * `ws` node that parses JSON and answers, measured in the same run against the same server.
 *
 *   node --import tsx bench/node-client-roundtrip.ts
 *
 * Env: ROUNDTRIPS (default 2000), CONCURRENCY (default 32), ROUNDS (default 3; the nodes
 * alternate each round and samples are pooled).
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { NodeClient } from '../packages/node-client/src/index.js';
import {
  startBenchServer,
  startRawNode,
  type BenchServer,
} from '../packages/node-client/src/testing/bench-peers.js';

const roundTrips = Number(process.env.ROUNDTRIPS ?? 2_000);
const concurrency = Number(process.env.CONCURRENCY ?? 32);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmUp = 500;
const text = 'x'.repeat(200);

interface Node {
  readonly name: string;
  start(server: BenchServer): Promise<() => Promise<void> | void>;
}

const nodes: Node[] = [
  {
    name: 'bare ws node',
    async start(server) {
      const registered = server.nextNode();
      const raw = await startRawNode(server.url);
      await registered;
      return () => raw.close();
    },
  },
  {
    name: 'NodeClient',
    async start(server) {
      const registered = server.nextNode();
      const client = new NodeClient({
        url: server.url,
        kind: 'desktop',
        userId: 'bench',
        // One above the load, so the node never flips to busy: this measures per-call overhead.
        node: { maxConcurrentTasks: concurrency + 1 },
        tools: {
          echo: {
            inputSchema: {
              type: 'object',
              properties: { text: { type: 'string' } },
              required: ['text'],
            },
            handler: (args) => String(args.text),
          },
        },
      });
      await client.start();
      await registered;
      return () => client.close();
    },
  },
];

async function measure(
  server: BenchServer,
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
        await server.call(text);
        us.push((performance.now() - t0) * 1_000);
      }
    }),
  );
  return { us, ms: performance.now() - started };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function main(): Promise<void> {
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}`,
  );
  console.log(
    `request: tools/call echo with a ${text.length}-character text; ${roundTrips} round trips × ${rounds} rounds per node and scenario\n`,
  );
  const rows: string[] = [];
  for (const [scenario, workers] of [
    ['sequential', 1],
    [`concurrency ${concurrency}`, concurrency],
  ] as const) {
    const samples = new Map<string, { us: number[]; ms: number }>(
      nodes.map((n) => [n.name, { us: [], ms: 0 }]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const node of nodes) {
        const server = await startBenchServer();
        const stop = await node.start(server);
        await measure(server, warmUp, workers);
        const { us, ms } = await measure(server, roundTrips, workers);
        const pooled = samples.get(node.name)!;
        pooled.us.push(...us);
        pooled.ms += ms;
        await stop();
        await server.close();
      }
    }
    const stats = nodes.map((n) => {
      const { us, ms } = samples.get(n.name)!;
      const sorted = [...us].sort((a, b) => a - b);
      return {
        name: n.name,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        rps: (us.length / ms) * 1_000,
      };
    });
    const base = stats[0]!;
    for (const s of stats) {
      const ratio =
        s === base
          ? 'baseline'
          : `${(s.p50 / base.p50).toFixed(2)}× / ${(s.p99 / base.p99).toFixed(2)}× / ${(s.rps / base.rps).toFixed(2)}×`;
      rows.push(
        `| ${scenario} | ${s.name} | ${s.p50.toFixed(0)} | ${s.p99.toFixed(0)} | ${s.rps.toFixed(0)} | ${ratio} |`,
      );
    }
  }
  console.log(
    '| scenario | node | p50 (µs) | p99 (µs) | round trips/s | NodeClient ÷ bare (p50 / p99 / throughput) |',
  );
  console.log('| --- | --- | ---: | ---: | ---: | --- |');
  for (const row of rows) console.log(row);
}

await main();

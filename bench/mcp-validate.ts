/**
 * MCP validation latency: `validateMcpServer` (SSRF-guarded fetch over node:http, deadline, error
 * classification, descriptor mapping) against a bare SDK client doing the same connect, list of
 * every page of tools and prompts, session end and close with the platform fetch. Both run in
 * the same process against the same servers, alternating rounds, so the ratio is meaningful on
 * whatever machine runs it.
 *
 *   node --import tsx bench/mcp-validate.ts
 *
 * Env: ITERATIONS (default 150 per variant and scenario), ROUNDS (default 3), WARMUP (default 20).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createUrlGuard } from '../packages/url-guard/src/index.js';
import { StdioPolicy, validateMcpServer, type McpPolicy } from '../packages/mcp/src/index.js';
import { bareSdkValidate } from '../packages/mcp/src/testing/bare-sdk-client.js';
import { serveFixture } from '../packages/mcp/src/testing/fixture-server.js';
import { startEverything } from '../packages/mcp/src/testing/server-everything.js';

const iterations = Number(process.env.ITERATIONS ?? 150);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmUp = Number(process.env.WARMUP ?? 20);

const policy: McpPolicy = {
  urlGuard: createUrlGuard({ allowPrivateNetworks: true }),
  stdio: new StdioPolicy([]),
};

type Variant = { name: string; run: (url: string) => Promise<number> };
const variants: Variant[] = [
  {
    name: 'bare SDK client (baseline)',
    run: async (url) => (await bareSdkValidate(url)).tools.length,
  },
  {
    name: 'validateMcpServer',
    run: async (url) =>
      (
        await validateMcpServer(
          { name: 'b', base_url: url, transport_type: 'streamable_http' },
          policy,
        )
      ).tool_count,
  },
];

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function scenario(name: string, url: string): Promise<void> {
  const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  const counts = new Set<number>();
  for (const v of variants) for (let i = 0; i < warmUp; i++) counts.add(await v.run(url));
  if (counts.size !== 1) throw new Error(`variants disagree on the tool count: ${[...counts]}`);
  const per = Math.ceil(iterations / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      for (let i = 0; i < per; i++) {
        const t0 = performance.now();
        await v.run(url);
        samples.get(v.name)!.push(performance.now() - t0);
      }
    }
  }
  const stats = variants.map((v) => {
    const ms = samples.get(v.name)!.sort((a, b) => a - b);
    const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
    return { name: v.name, n: ms.length, p50: quantile(ms, 0.5), p95: quantile(ms, 0.95), mean };
  });
  const base = stats[0]!;
  console.log(`\n${name} (${[...counts][0]} tools)`);
  console.log('| variant | n | p50 (ms) | p95 (ms) | mean (ms) | ÷ baseline (p50 / p95 / mean) |');
  console.log('| --- | ---: | ---: | ---: | ---: | --- |');
  for (const s of stats) {
    const ratio =
      s === base
        ? 'baseline'
        : `${(s.p50 / base.p50).toFixed(2)}× / ${(s.p95 / base.p95).toFixed(2)}× / ${(s.mean / base.mean).toFixed(2)}×`;
    console.log(
      `| ${s.name} | ${s.n} | ${s.p50.toFixed(2)} | ${s.p95.toFixed(2)} | ${s.mean.toFixed(2)} | ${ratio} |`,
    );
  }
}

console.log(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(
      ' ',
    )}; ${iterations} validations per variant in ${rounds} alternating rounds, ${warmUp} warm-up`,
);

const everything = await startEverything('streamableHttp');
const fixture = await serveFixture({
  transport: 'streamable_http',
  tools: 200,
  prompts: 20,
  pageSize: 20,
});
try {
  await scenario('server-everything, streamable HTTP, separate process', everything.url);
  await scenario('SDK fixture in-process, 200 tools + 20 prompts in pages of 20', fixture.url);
} finally {
  await everything.close();
  await fixture.close();
}
console.log(
  `\nload after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

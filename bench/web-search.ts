/**
 * What the `web_search` tool costs on top of the provider: the tool's `execute` (argument
 * checks, breaker, provider request, dedupe, formatting; cache off) against the baseline of the
 * same request sent to the same fake Tavily with a bare `fetch` and its JSON read, alternated in
 * the same run. The fake answers at once, so the ratio is our overhead, not the network's.
 *
 *   node --import tsx bench/web-search.ts
 *
 * Env: CALLS (default 2000), ROUNDS (default 5).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { ToolContext } from '../packages/agent-runtime/src/index.js';
import { createMemoryEphemeralStore } from '../packages/ephemeral/src/index.js';
import { startFakeSearchProviders } from '../packages/testing/src/index.js';
import { tavilyProvider, WebSearch, webSearchTool } from '../packages/web-search/src/index.js';

const CALLS = Number(process.env.CALLS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const KEY = 'tvly-bench';
const fakes = await startFakeSearchProviders({ tavily: KEY, brave: 'unused' });
const tool = webSearchTool(
  new WebSearch(
    [tavilyProvider({ apiKey: KEY, baseUrl: fakes.tavily.url })],
    createMemoryEphemeralStore(),
    {
      timeoutMs: 5_000,
      cacheTtlMs: 0,
      breakerFailures: 3,
      breakerCooldownMs: 30_000,
    },
  ),
);
const context = { signal: new AbortController().signal } as ToolContext;

async function direct(query: string): Promise<void> {
  const response = await fetch(`${fakes.tavily.url}/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, max_results: 5 }),
  });
  await response.json();
}
async function viaTool(query: string): Promise<void> {
  const output = await tool.execute({ query, max_results: 5 }, context);
  if (output.isError) throw new Error(output.content);
}

console.log(
  `# web-search: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `${ROUNDS} rounds x ${CALLS} calls each`,
);
const perCall: Record<string, number[]> = { direct: [], tool: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of [
    ['direct', direct],
    ['tool', viaTool],
  ] as const) {
    fakes.tavily.requests.length = 0;
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) await fn(`query ${round} ${i}`);
    perCall[name]!.push(((performance.now() - t0) * 1000) / CALLS);
  }
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const base = median(perCall.direct!);
for (const name of ['direct', 'tool']) {
  console.log(
    JSON.stringify({
      case: name === 'direct' ? 'fetch to the fake (baseline)' : 'web_search tool',
      microsPerCall: Math.round(median(perCall[name]!)),
      vsBaseline: Number((median(perCall[name]!) / base).toFixed(2)),
    }),
  );
}
await fakes.close();

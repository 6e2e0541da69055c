/**
 * MCP tools per run: what the connection pool saves. One "run" is what the agent does with an
 * `mcp` tool entry: get the server's tools (the tool source) and call one tool. Baseline: a
 * fresh connection per run (connect, initialize, list, call, end the session), which is what a
 * service without the pool does. Measured: `createMcpTools` with its pool (a warm session per
 * user and server). Same process, same SDK server on loopback, alternating rounds.
 *
 *   node --import tsx bench/mcp-tools.ts
 *
 * Env: ITERATIONS (default 200 per variant and round), ROUNDS (default 3), WARMUP (default 20).
 */
import { Writable } from 'node:stream';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createLogger } from '../packages/logger/src/index.js';
import { connectMcp } from '../packages/mcp/src/index.js';
import { runRequest } from '../packages/agent-runtime/src/index.js';
import { McpToolEntry } from '../packages/protocol/src/index.js';
import { createMcpTools, mcpPolicy } from '../packages/mcp-tools/src/index.js';
import { startToolServer } from '../packages/mcp-tools/src/testing/tool-server.js';

const iterations = Number(process.env.ITERATIONS ?? 200);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmUp = Number(process.env.WARMUP ?? 20);

const server = await startToolServer();
const policy = mcpPolicy({ MCP_ALLOW_PRIVATE_NETWORKS: true, MCP_STDIO_ALLOWLIST: [] });
const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });
const mcp = createMcpTools({ policy, logger });
const signal = new AbortController().signal;
const request = runRequest({
  userId: 'bench-user',
  message: 'hi',
  model: {
    baseUrl: 'https://llm.example/v1',
    apiKey: 'k',
    name: 'm',
    temperature: 0.7,
    chosenBy: 'request',
  },
  capabilities: {
    mcpServers: [McpToolEntry.parse({ type: 'mcp', name: 'bench', base_url: server.url })],
  },
});
const config = { name: 'bench', base_url: server.url, transport_type: 'streamable_http' as const };

const variants = [
  {
    name: 'fresh connection per run (baseline)',
    run: async () => {
      const connection = await connectMcp(config, policy, { timeoutMs: 10_000 });
      try {
        await connection.listTools();
        await connection.callTool('echo', { text: 'x' });
      } finally {
        await connection.close();
      }
    },
  },
  {
    name: 'createMcpTools (pooled session)',
    run: async () => {
      const tools = await mcp.source({
        userId: 'bench-user',
        sessionId: 's',
        runId: 'r',
        request,
        signal,
      });
      const echo = tools.find((tool) => tool.name === 'mcp_bench__echo')!;
      const output = await echo.execute({ text: 'x' }, { signal } as never);
      if (output.isError) throw new Error(output.content);
    },
  },
];

const totals = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (const variant of variants) for (let i = 0; i < warmUp; i++) await variant.run();
for (let round = 0; round < rounds; round++) {
  for (const variant of variants) {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) await variant.run();
    totals.get(variant.name)!.push((performance.now() - start) / iterations);
  }
}
await mcp.close();
await server.close();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const baseline = median(totals.get(variants[0]!.name)!);
console.log(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, ` +
    `${iterations} runs x ${rounds} rounds, ${warmUp} warm-up`,
);
for (const variant of variants) {
  const ms = median(totals.get(variant.name)!);
  console.log(
    `${variant.name}: ${ms.toFixed(3)} ms/run (median of rounds), ${(ms / baseline).toFixed(3)}x baseline`,
  );
}

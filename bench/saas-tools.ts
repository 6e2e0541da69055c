/**
 * What a SaaS account tool costs on top of the provider: `github_list_repos`'s `execute`
 * (argument parsing, expiry check, the request with its headers, error mapping, the text for the
 * model) against the baseline of the same request to the same fake GitHub with a bare `fetch`
 * and its JSON read, alternated in the same run. The fake answers at once, so the ratio is the
 * tool's own overhead.
 *
 *   node --import tsx bench/saas-tools.ts
 *
 * Env: CALLS (default 2000), ROUNDS (default 5).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { AgentTool, RunInfo, ToolContext } from '../packages/agent-runtime/src/index.js';
import { createMemoryEphemeralStore } from '../packages/ephemeral/src/index.js';
import { saasToolSource } from '../packages/saas-tools/src/index.js';
import { startFakeSaas } from '../packages/testing/src/index.js';

const CALLS = Number(process.env.CALLS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const fake = await startFakeSaas();
fake.grant('github', 'bench-token', 'bench-refresh');
const e = fake.env;
const unused = { apiBaseUrl: e.GMAIL_API_BASE_URL!, tokenUrl: e.GOOGLE_OAUTH_TOKEN_URL! };
const source = saasToolSource({
  ephemeral: createMemoryEphemeralStore(),
  endpoints: {
    github: { apiBaseUrl: e.GITHUB_API_BASE_URL!, tokenUrl: e.GITHUB_OAUTH_TOKEN_URL! },
    gmail: unused,
    google_drive: unused,
    slack: unused,
    notion: unused,
  },
  settings: { callTimeoutMs: 30_000, maxRetryAfterMs: 10_000 },
});
const tools = (await source({
  request: {
    capabilities: { oauthTools: [{ type: 'oauth', name: 'github', access_token: 'bench-token' }] },
  },
} as unknown as RunInfo)) as AgentTool[];
const tool = tools.find((t) => t.name === 'github_list_repos')!;
const context = { signal: new AbortController().signal, emit: () => {} } as unknown as ToolContext;

async function direct(): Promise<void> {
  const response = await fetch(`${e.GITHUB_API_BASE_URL}/user/repos?per_page=20&sort=updated`, {
    headers: {
      authorization: 'Bearer bench-token',
      accept: 'application/vnd.github+json',
      'x-github-api-version': '2022-11-28',
    },
  });
  await response.json();
}
async function viaTool(): Promise<void> {
  const output = await tool.execute({}, context);
  if (output.isError) throw new Error(output.content);
}

console.log(
  `# saas-tools: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `${ROUNDS} rounds x ${CALLS} calls each`,
);
const perCall: Record<string, number[]> = { direct: [], tool: [] };
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of [
    ['direct', direct],
    ['tool', viaTool],
  ] as const) {
    fake.requests.length = 0;
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) await fn();
    perCall[name]!.push(((performance.now() - t0) * 1000) / CALLS);
  }
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const base = median(perCall.direct!);
for (const name of ['direct', 'tool']) {
  console.log(
    JSON.stringify({
      case: name === 'direct' ? 'fetch to the fake (baseline)' : 'github_list_repos tool',
      microsPerCall: Math.round(median(perCall[name]!)),
      vsBaseline: Number((median(perCall[name]!) / base).toFixed(2)),
    }),
  );
}
await fake.close();

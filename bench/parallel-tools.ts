/**
 * One model turn of 1, 4 and 16 calls to a node tool that takes 50 ms, run one after the other
 * (`AGENT_MAX_PARALLEL_TOOLS=1`: the loop as it was before parallel calls, the baseline) against
 * in parallel (the default limit, 8, and 16), measured in the same run on the same processes.
 *
 *   pnpm build && node --import tsx bench/parallel-tools.ts
 *
 * Setup: one gateway process and one api process per variant (only the setting differs) on
 * Redis and PostgreSQL, the scripted OpenAI-compatible model, and one simulated desktop node
 * (the node client library, in this process) registered with `max_concurrent_tasks` 16 whose
 * tool waits 50 ms. Each sample is one `POST /api/agent/invoke` whose model turn calls the tool
 * N times and then answers; measured at the client: the turn's tools (first `tool_call` to last
 * `tool_result`) and the whole run (request to `done`). Variants alternate within each round.
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), ROUNDS (samples per variant and size, default 15),
 * TOOL_MS (default 50).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import jwt from 'jsonwebtoken';
import { NodeClient } from '../packages/node-client/src/index.js';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  textReply,
  toolCallsReply,
  uniquePrefix,
  type ServiceProcess,
} from '../packages/testing/src/index.js';

process.env.REDIS_URL ??= 'redis://127.0.0.1:6379';
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const rounds = Number(process.env.ROUNDS ?? 15);
const toolMs = Number(process.env.TOOL_MS ?? 50);
const SIZES = [1, 4, 16];
const VARIANTS = [
  { name: 'sequential (limit 1, baseline)', limit: 1 },
  { name: 'parallel, default limit 8', limit: 8 },
  { name: 'parallel, limit 16', limit: 16 },
];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Reads an SSE response; calls `onEvent` with each event's type as it arrives. */
async function readSse(res: Response, onEvent: (type: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const data = block.split('\n').find((l) => l.startsWith('data: '));
      if (data) onEvent((JSON.parse(data.slice(6)) as { type: string }).type);
    }
  }
}

async function main(): Promise<void> {
  const model = await startScriptedModel();
  const schema = await createTestSchema('bench_parallel');
  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-parallel-'));
  writeFileSync(join(dir, 'public.pem'), keys.publicKey);
  writeFileSync(join(dir, 'private.pem'), keys.privateKey);
  const env = {
    REDIS_URL: process.env.REDIS_URL!,
    DATABASE_URL: process.env.DATABASE_URL!,
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: uniquePrefix('bench-parallel'),
    JWT_PUBLIC_KEY_FILE: join(dir, 'public.pem'),
    JWT_PRIVATE_KEY_FILE: join(dir, 'private.pem'),
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    LOG_LEVEL: 'info',
  };
  const processes: ServiceProcess[] = [];
  const gateway = await startServiceProcess({
    entry: 'apps/gateway/dist/main.js',
    env: { ...env, INSTANCE_ID: 'gateway-1' },
  });
  processes.push(gateway);
  const apis = await Promise.all(
    VARIANTS.map((variant, i) =>
      startServiceProcess({
        entry: 'apps/api/dist/main.js',
        env: {
          ...env,
          INSTANCE_ID: `api-${i + 1}`,
          AGENT_MAX_PARALLEL_TOOLS: String(variant.limit),
        },
      }),
    ),
  );
  processes.push(...apis);
  const token = jwt.sign({ sub: 'bench' }, keys.privateKey, {
    algorithm: 'RS256',
    expiresIn: '2h',
  });
  const node = new NodeClient({
    url: gateway.url,
    kind: 'desktop',
    userId: 'bench',
    nodeId: 'bench-pc',
    token,
    node: { maxConcurrentTasks: 16 },
    tools: {
      wait: {
        description: `Waits ${toolMs} ms`,
        writes: false,
        handler: async () => {
          await new Promise((resolve) => setTimeout(resolve, toolMs));
          return 'waited';
        },
      },
    },
  });
  await node.start();

  let n = 0;
  /** One run through a variant's api: ms of the turn's tools and of the whole run. */
  async function sample(
    api: ServiceProcess,
    calls: number,
  ): Promise<{ turn: number; run: number }> {
    const name = `bench-${++n}`;
    model.script(name, [
      toolCallsReply(Array.from({ length: calls }, (_, i) => ({ name: 'wait', args: { i } }))),
      textReply('done', 1),
    ]);
    const t0 = performance.now();
    const res = await fetch(`${api.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        message: 'go',
        llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-bench', modelName: name },
      }),
    });
    let firstCall = NaN;
    let lastResult = NaN;
    let results = 0;
    let final = '';
    await readSse(res, (type) => {
      if (type === 'tool_call' && Number.isNaN(firstCall)) firstCall = performance.now();
      if (type === 'tool_result') {
        lastResult = performance.now();
        results++;
      }
      if (type === 'done' || type === 'error') final = type;
    });
    if (final !== 'done' || results !== calls) {
      throw new Error(`run ${name} ended with ${final}, ${results} of ${calls} results`);
    }
    return { turn: lastResult - firstCall, run: performance.now() - t0 };
  }

  for (const api of apis) for (let i = 0; i < 3; i++) await sample(api, 4);
  const measured = new Map<string, { turn: number[]; run: number[] }>();
  for (let round = 0; round < rounds; round++) {
    for (const size of SIZES) {
      const order = VARIANTS.map((_, i) => (i + round) % VARIANTS.length);
      for (const v of order) {
        const key = `${size}:${v}`;
        const entry = measured.get(key) ?? { turn: [], run: [] };
        const r = await sample(apis[v]!, size);
        entry.turn.push(r.turn);
        entry.run.push(r.run);
        measured.set(key, entry);
      }
    }
  }
  await node.close();
  await Promise.all(processes.map((p) => p.stop('SIGTERM')));
  await model.close();
  await schema.drop();
  rmSync(dir, { recursive: true, force: true });

  console.log(
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; tool ${toolMs} ms; ${rounds} runs per cell, variants alternating\n`,
  );
  console.log(
    '| calls in the turn | variant | turn’s tools, median (ms) | ÷ sequential | whole run, median (ms) | ÷ sequential |',
  );
  console.log('|---:|---|---:|---:|---:|---:|');
  for (const size of SIZES) {
    const base = measured.get(`${size}:0`)!;
    for (const [v, variant] of VARIANTS.entries()) {
      const m = measured.get(`${size}:${v}`)!;
      const turn = median(m.turn);
      const run = median(m.run);
      console.log(
        `| ${size} | ${variant.name} | ${turn.toFixed(1)} | ${(turn / median(base.turn)).toFixed(2)} | ${run.toFixed(1)} | ${(run / median(base.run)).toFixed(2)} |`,
      );
    }
  }
}

await main();

/**
 * The agent SSE endpoint against calling the same model directly, measured in the same run:
 *
 * - time to first `message_chunk`: `POST /api/agent/invoke` on a real api process (Redis +
 *   PostgreSQL) until the first chunk event, vs the openai client's `create()` until its first
 *   content chunk, both against the same scripted OpenAI-compatible server;
 * - per-event overhead: wall time per chunk over a long answer (first to last chunk), same pair,
 *   and CPU per chunk of the api process vs a process that only runs the openai client;
 * - memory per concurrent open stream: RSS growth of the api process per open agent stream, vs
 *   a bare Node SSE server holding the same number of streams.
 *
 *   pnpm build && node --import tsx bench/agent-stream.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), SAMPLES (default 40), CHUNKS (default 2000),
 * STREAMS (default 300; memory is the slope between STREAMS/3 and STREAMS open streams).
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import jwt from 'jsonwebtoken';
import OpenAI from 'openai';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptStep,
} from '../packages/testing/src/index.js';

process.env.REDIS_URL ??= 'redis://127.0.0.1:6379';
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const samples = Number(process.env.SAMPLES ?? 40);
const chunkCount = Number(process.env.CHUNKS ?? 2_000);
const streams = Number(process.env.STREAMS ?? 300);
const API_KEY = 'sk-bench';

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};
const rssKb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** User + system CPU time of a process so far, in ms (from /proc; clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/**
 * Runs the openai client alone in a child process over `models` (the first one warms it up);
 * µs of its CPU per chunk.
 */
async function clientCpuPerChunk(baseUrl: string, models: string[]): Promise<number> {
  const openai = new URL(import.meta.resolve('openai')).href;
  const script = `
    import OpenAI from ${JSON.stringify(openai)};
    const client = new OpenAI({ baseURL: ${JSON.stringify(baseUrl)}, apiKey: 'sk-bench', maxRetries: 0, logLevel: 'off' });
    const consume = async (model) => {
      let chunks = 0;
      const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'go' }], stream: true });
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) chunks++;
      return chunks;
    };
    const [warm, ...measured] = ${JSON.stringify(models)};
    await consume(warm);
    let chunks = 0;
    const before = process.cpuUsage();
    for (const model of measured) chunks += await consume(model);
    const used = process.cpuUsage(before);
    console.log((used.user + used.system) / chunks);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += String(d)));
  await new Promise((resolve) => child.on('exit', resolve));
  return Number(out.trim());
}

function longAnswer(): ScriptStep {
  return textReply('x'.repeat(chunkCount * 4), chunkCount);
}

/**
 * The same answer with 1 ms between chunks, so every consumer reads one chunk at a time: an
 * answer sent at full speed piles up in the socket of a busier reader, which then pays once per
 * read for many chunks and looks cheaper per chunk than it is.
 */
function pacedAnswer(): ScriptStep {
  const pieces = Array.from({ length: chunkCount }, () => [{ text: 'xxxx' }, { waitMs: 1 }]).flat();
  return { kind: 'stream', pieces: [...pieces, { finish: 'stop' }] };
}

/** Reads an SSE response; calls `onEvent` per event; resolves at the end of the stream. */
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
  const schema = await createTestSchema('bench_agent');
  const keys = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-agent-'));
  writeFileSync(join(dir, 'public.pem'), keys.publicKey);
  writeFileSync(join(dir, 'private.pem'), keys.privateKey);
  const api = await startServiceProcess({
    entry: 'apps/api/dist/main.js',
    env: {
      REDIS_URL: process.env.REDIS_URL,
      DATABASE_URL: process.env.DATABASE_URL,
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: `bench:agent:${process.pid}:`,
      JWT_PUBLIC_KEY_FILE: join(dir, 'public.pem'),
      JWT_PRIVATE_KEY_FILE: join(dir, 'private.pem'),
      LOG_LEVEL: 'info',
    },
  });
  const token = jwt.sign({ sub: 'bench' }, keys.privateKey, {
    algorithm: 'RS256',
    expiresIn: '2h',
  });
  const direct = new OpenAI({
    baseURL: model.baseUrl,
    apiKey: API_KEY,
    maxRetries: 0,
    logLevel: 'off',
  });
  let n = 0;

  /** One run through the service: ms to the first chunk, and ms per chunk after it. */
  async function viaService(step: ScriptStep): Promise<{ first: number; perChunk: number }> {
    const name = `svc-${++n}`;
    model.script(name, [step]);
    const t0 = performance.now();
    const res = await fetch(`${api.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        message: 'go',
        llm_config: { baseUrl: model.baseUrl, apiKey: API_KEY, modelName: name },
      }),
    });
    let first = NaN;
    let last = NaN;
    let count = 0;
    await readSse(res, (type) => {
      if (type !== 'message_chunk') return;
      last = performance.now();
      if (count++ === 0) first = last;
    });
    return { first: first - t0, perChunk: count > 1 ? (last - first) / (count - 1) : NaN };
  }

  /** The same through the openai client straight to the model. */
  async function viaClient(step: ScriptStep): Promise<{ first: number; perChunk: number }> {
    const name = `dir-${++n}`;
    model.script(name, [step]);
    const t0 = performance.now();
    const stream = await direct.chat.completions.create({
      model: name,
      messages: [{ role: 'user', content: 'go' }],
      stream: true,
    });
    let first = NaN;
    let last = NaN;
    let count = 0;
    for await (const chunk of stream) {
      if (!chunk.choices[0]?.delta.content) continue;
      last = performance.now();
      if (count++ === 0) first = last;
    }
    return { first: first - t0, perChunk: count > 1 ? (last - first) / (count - 1) : NaN };
  }

  for (let i = 0; i < 10; i++) {
    await viaService(textReply('warm up', 3));
    await viaClient(textReply('warm up', 3));
  }
  const ttfc = { service: [] as number[], client: [] as number[] };
  for (let i = 0; i < samples; i++) {
    const order = i % 2 === 0 ? (['service', 'client'] as const) : (['client', 'service'] as const);
    for (const which of order) {
      const r = await (which === 'service' ? viaService : viaClient)(textReply('Hello there.', 3));
      ttfc[which].push(r.first);
    }
  }
  const per = { service: [] as number[], client: [] as number[] };
  for (let i = 0; i < 6; i++) {
    for (const which of i % 2 === 0
      ? (['service', 'client'] as const)
      : (['client', 'service'] as const)) {
      const r = await (which === 'service' ? viaService : viaClient)(longAnswer());
      per[which].push(r.perChunk * 1_000);
    }
  }
  // CPU per chunk: the api process (openai client + events + SSE + run log) against a process
  // that only consumes the same answers with the openai client.
  const cpu = { service: NaN, client: NaN };
  {
    const before = cpuMs(api.child.pid!);
    for (let i = 0; i < 4; i++) await viaService(pacedAnswer());
    cpu.service = ((cpuMs(api.child.pid!) - before) * 1_000) / (4 * chunkCount);
    const names = Array.from({ length: 5 }, () => `cpu-${++n}`);
    for (const name of names) model.script(name, [pacedAnswer()]);
    cpu.client = await clientCpuPerChunk(model.baseUrl, names);
  }

  // Memory: open agent streams held at their first chunk, vs a bare SSE server.
  const baseline = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, s) => { s.writeHead(200, { 'content-type': 'text/event-stream' }); s.write('id: 1\\ndata: {"type":"message_chunk","content":"x"}\\n\\n'); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const baselinePort = await new Promise<number>((resolve) =>
    baseline.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  let hold!: () => void;
  const held = new Promise<void>((resolve) => (hold = resolve));
  const open: AbortController[] = [];
  async function openService(count: number): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, async () => {
        const name = `mem-${++n}`;
        model.script(name, [
          { kind: 'stream', pieces: [{ text: 'x' }, { waitFor: held }, { finish: 'stop' }] },
        ]);
        const controller = new AbortController();
        open.push(controller);
        const res = await fetch(`${api.url}/api/agent/invoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({
            message: 'hold',
            llm_config: { baseUrl: model.baseUrl, apiKey: API_KEY, modelName: name },
          }),
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        let text = '';
        while (!text.includes('message_chunk'))
          text += new TextDecoder().decode((await reader.read()).value);
      }),
    );
  }
  async function openBaseline(count: number): Promise<void> {
    await Promise.all(
      Array.from({ length: count }, async () => {
        const controller = new AbortController();
        open.push(controller);
        const res = await fetch(`http://127.0.0.1:${baselinePort}/`, { signal: controller.signal });
        await res.body!.getReader().read();
      }),
    );
  }
  const low = Math.round(streams / 3);
  const memory: Record<string, number> = {};
  for (const [label, pid, openSome] of [
    ['bare SSE server', baseline.pid!, openBaseline],
    ['agent stream', api.child.pid!, openService],
  ] as const) {
    await openSome(low);
    await sleep(1_000);
    const at = rssKb(pid);
    await openSome(streams - low);
    await sleep(1_000);
    memory[label] = (rssKb(pid) - at) / (streams - low);
  }
  hold();
  for (const controller of open) controller.abort();
  baseline.kill();
  await api.stop('SIGTERM');
  await model.close();
  await schema.drop();

  const f = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(2));
  console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}`);
  console.log(
    `TTFC: ${samples} samples each (3-chunk answer), alternating; per event: 6 × ${chunkCount}-chunk answers; memory: ${low} → ${streams} open streams\n`,
  );
  console.log('| measure | openai client → model (baseline) | api SSE → model | ratio |');
  console.log('|---|---:|---:|---:|');
  for (const p of [50, 90]) {
    const c = percentile(ttfc.client, p);
    const s = percentile(ttfc.service, p);
    console.log(`| time to first chunk p${p} (ms) | ${f(c)} | ${f(s)} | ${(s / c).toFixed(1)}× |`);
  }
  const c = percentile(per.client, 50);
  const s = percentile(per.service, 50);
  console.log(
    `| per chunk, wall clock, median of runs (µs) | ${f(c)} | ${f(s)} | ${(s / c).toFixed(1)}× |`,
  );
  console.log(
    `| per chunk, CPU of the consuming process, 1 ms pacing (µs) | ${f(cpu.client)} | ${f(cpu.service)} | ${(cpu.service / cpu.client).toFixed(1)}× |`,
  );
  console.log(
    `| RSS per open stream (KiB) | ${f(memory['bare SSE server']!)} (bare SSE server) | ${f(memory['agent stream']!)} | ${(memory['agent stream']! / memory['bare SSE server']!).toFixed(1)}× |`,
  );
}

await main();

/**
 * An agent's streamed answer, the service's `POST /api/agent/invoke` against `@openai/agents`
 * `run(agent, input, { stream: true })` behind a minimal HTTP wrapper, both against the same
 * scripted OpenAI-compatible model (`startScriptedModel`), in the same run.
 *
 *   pnpm build && node --import tsx bench/peers/agent-stream.ts
 *
 * - `model`: the `openai` client calling the scripted model directly, from this process: the
 *   model's own time to first chunk, which both services add to.
 * - `@openai/agents`: this file with `BENCH_ROLE=agents-server`, a `node:http` server whose
 *   `POST /invoke` runs an `Agent` (chat-completions model on the scripted server, tracing off)
 *   with `stream: true` and writes each text delta as an SSE `message_chunk` event.
 * - `ours`: the built API process (`apps/api/dist/main.js`, Redis + PostgreSQL, the defaults),
 *   `POST /api/agent/invoke` with `llm_config` naming the scripted model.
 * Time to first chunk: request start → first text chunk read by the client; SAMPLES per variant,
 * the variants alternating, over a 3-chunk answer. CPU per chunk: the server process's user +
 * system time (/proc) over PACED answers of CHUNKS chunks, 1 ms apart (so each server reads one
 * chunk at a time), divided by the chunks.
 *
 * Env: SAMPLES (default 30), CHUNKS (default 1000), PACED (default 3), REDIS_URL, DATABASE_URL.
 */
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { importKeys, signAccessToken } from '../../packages/auth/src/index.js';
import {
  createTestSchema,
  startScriptedModel,
  textReply,
  uniquePrefix,
  type ScriptStep,
} from '../../packages/testing/src/index.js';
import { fmt, percentile } from '../support/open-loop.js';
import { cpuMs, machineLine, startEntry, type Service } from '../support/processes.js';
import { unlinkPrefix } from '../support/redis.js';
import { ensurePeers, requirePeer } from './peers.js';

const SELF = fileURLToPath(import.meta.url);
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const samples = Number(process.env.SAMPLES ?? 30);
const chunkCount = Number(process.env.CHUNKS ?? 1_000);
const paced = Number(process.env.PACED ?? 3);
const API_KEY = 'sk-bench';

// ---------------------------------------------------------------- the few peer members used

interface AgentsModule {
  Agent: new (options: { name: string; instructions: string; model: unknown }) => unknown;
  OpenAIChatCompletionsModel: new (client: unknown, model: string) => unknown;
  run(
    agent: unknown,
    input: string,
    options: { stream: true },
  ): Promise<
    AsyncIterable<{ type: string; data?: { type: string; delta?: string } }> & {
      completed: Promise<void>;
    }
  >;
  setTracingDisabled(disabled: boolean): void;
}
interface OpenAIModule {
  OpenAI: new (options: Record<string, unknown>) => unknown;
}

// ---------------------------------------------------------------- @openai/agents server (child)

function runAgentsServer(): void {
  const agents = requirePeer<AgentsModule>('@openai/agents');
  const { OpenAI: PeerOpenAI } = requirePeer<OpenAIModule>('openai');
  agents.setTracingDisabled(true);
  const client = new PeerOpenAI({
    baseURL: process.env.MODEL_BASE_URL,
    apiKey: API_KEY,
    maxRetries: 0,
  });
  const server = createServer((request, response) => {
    if (request.url === '/healthz') return void response.end('ok');
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      void (async () => {
        const { message, model } = JSON.parse(body) as { message: string; model: string };
        const agent = new agents.Agent({
          name: 'bench',
          instructions: 'You are a helpful assistant.',
          model: new agents.OpenAIChatCompletionsModel(client, model),
        });
        response.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
        });
        const stream = await agents.run(agent, message, { stream: true });
        for await (const event of stream) {
          if (event.type === 'raw_model_stream_event' && event.data?.type === 'output_text_delta')
            response.write(
              `data: ${JSON.stringify({ type: 'message_chunk', content: event.data.delta })}\n\n`,
            );
        }
        await stream.completed;
        response.end(`data: ${JSON.stringify({ type: 'done' })}\n\n`);
      })().catch((error: unknown) => {
        response.end(`data: ${JSON.stringify({ type: 'error', message: String(error) })}\n\n`);
      });
    });
  });
  server.listen(Number(process.env.PORT), '127.0.0.1');
}

// ---------------------------------------------------------------- main

/** Reads an SSE response; resolves with the time of the first `message_chunk` and the count. */
async function readChunks(response: Response, started: number) {
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  let buffer = '';
  let first = NaN;
  let chunks = 0;
  let done = false;
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer
        .slice(0, at)
        .split('\n')
        .find((line) => line.startsWith('data: '));
      buffer = buffer.slice(at + 2);
      if (!data) continue;
      const event = JSON.parse(data.slice(6)) as { type: string; message?: string };
      if (event.type === 'message_chunk') {
        if (chunks++ === 0) first = performance.now() - started;
      } else if (event.type === 'done') done = true;
      else if (event.type === 'error') throw new Error(`stream error: ${event.message}`);
    }
  }
  if (!done) throw new Error('the stream ended without done');
  return { first, chunks };
}

async function main(): Promise<void> {
  const versions = ensurePeers(['@openai/agents', 'openai']);
  const model = await startScriptedModel();
  const children: ChildProcess[] = [];
  const cleanups: Array<() => Promise<unknown>> = [() => model.close()];
  try {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const token = (await signAccessToken(await importKeys(pair), 'bench')).accessToken;
    const schema = await createTestSchema('bench_agent_peer');
    cleanups.push(() => schema.drop());
    const prefix = uniquePrefix('bench-agent-peer');
    cleanups.push(() => unlinkPrefix(redisUrl, prefix));
    const start = async (entry: string, env: Record<string, string>, execArgv: string[] = []) => {
      const service = await startEntry(entry, env, { execArgv });
      children.push(service.child);
      cleanups.push(() => service.stop());
      return service;
    };
    const api: Service = await start('apps/api/dist/main.js', {
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: prefix,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema.schema,
      JWT_PUBLIC_KEY: pair.publicKey,
      JWT_PRIVATE_KEY: pair.privateKey,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
    });
    const agentsServer: Service = await start(
      SELF,
      { BENCH_ROLE: 'agents-server', MODEL_BASE_URL: model.baseUrl },
      ['--import', 'tsx'],
    );
    const direct = new OpenAI({ baseURL: model.baseUrl, apiKey: API_KEY, maxRetries: 0 });

    let n = 0;
    /** One answer of `step` through `variant`; the model name is unique per request. */
    const once = async (variant: string, step: ScriptStep) => {
      const name = `bench-${n++}`;
      model.script(name, [step]);
      const started = performance.now();
      if (variant === 'model') {
        const stream = await direct.chat.completions.create({
          model: name,
          messages: [{ role: 'user', content: 'Hi' }],
          stream: true,
        });
        let first = NaN;
        let chunks = 0;
        for await (const chunk of stream)
          if (chunk.choices[0]?.delta.content && chunks++ === 0)
            first = performance.now() - started;
        return { first, chunks };
      }
      const response =
        variant === 'ours'
          ? await fetch(`${api.url}/api/agent/invoke`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({
                message: 'Hi',
                llm_config: { baseUrl: model.baseUrl, apiKey: API_KEY, modelName: name },
              }),
            })
          : await fetch(`${agentsServer.url}/invoke`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ message: 'Hi', model: name }),
            });
      return readChunks(response, started);
    };

    const variants = ['model', '@openai/agents', 'ours'];
    const short = () => textReply('A short streamed answer of a few words.', 3);
    for (let i = 0; i < 5; i++) for (const v of variants) await once(v, short());
    const firsts = new Map<string, number[]>(variants.map((v) => [v, []]));
    for (let i = 0; i < samples; i++) {
      const order = i % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) firsts.get(v)!.push((await once(v, short())).first);
    }

    const pacedAnswer = (): ScriptStep => ({
      kind: 'stream',
      pieces: [
        ...Array.from({ length: chunkCount }, () => [{ text: 'xxxx' }, { waitMs: 1 }]).flat(),
        { finish: 'stop' },
      ],
    });
    const servers = { '@openai/agents': agentsServer, ours: api };
    const cpuPerChunk = new Map<string, number>();
    for (const v of Object.keys(servers)) await once(v, pacedAnswer());
    const cpu = new Map<string, { ms: number; chunks: number }>(
      Object.keys(servers).map((v) => [v, { ms: 0, chunks: 0 }]),
    );
    for (let i = 0; i < paced; i++) {
      for (const [v, service] of Object.entries(servers)) {
        const before = cpuMs(service.child.pid!) ?? 0;
        const { chunks } = await once(v, pacedAnswer());
        if (chunks !== chunkCount) throw new Error(`${v}: ${chunks} of ${chunkCount} chunks`);
        const c = cpu.get(v)!;
        c.ms += (cpuMs(service.child.pid!) ?? 0) - before;
        c.chunks += chunks;
      }
    }
    for (const [v, c] of cpu) cpuPerChunk.set(v, (c.ms * 1_000) / Math.max(1, c.chunks));

    console.log(`machine: ${machineLine()}`);
    console.log(`versions: ${versions.join(', ')}`);
    console.log(
      `${samples} samples per variant (alternating) of a 3-chunk answer after 5 warm-ups; CPU over ${paced} answers of ${chunkCount} chunks 1 ms apart per server, after one warm-up\n`,
    );
    console.log(
      '| variant | time to first chunk p50 (ms) | p90 (ms) | p50 over the model’s own (ms) | CPU per chunk, server process (µs) | ours ÷ @openai/agents: first chunk over the model / CPU per chunk |',
    );
    console.log('|---|---:|---:|---:|---:|---|');
    const p50 = (v: string) =>
      percentile(
        [...firsts.get(v)!].sort((a, b) => a - b),
        50,
      );
    const p90 = (v: string) =>
      percentile(
        [...firsts.get(v)!].sort((a, b) => a - b),
        90,
      );
    for (const v of variants) {
      const over = v === 'model' ? '' : fmt(p50(v) - p50('model'));
      const cpuCell = cpuPerChunk.has(v) ? fmt(cpuPerChunk.get(v)!) : '';
      const ratio =
        v === 'ours'
          ? `${((p50('ours') - p50('model')) / (p50('@openai/agents') - p50('model'))).toFixed(2)}× / ${(cpuPerChunk.get('ours')! / cpuPerChunk.get('@openai/agents')!).toFixed(2)}×`
          : v === '@openai/agents'
            ? 'baseline'
            : '';
      console.log(`| ${v} | ${fmt(p50(v))} | ${fmt(p90(v))} | ${over} | ${cpuCell} | ${ratio} |`);
    }
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

if (process.env.BENCH_ROLE === 'agents-server') runAgentsServer();
else {
  await main();
  process.exit(0);
}

/**
 * An agent's streamed answer, the service's `POST /api/agent/invoke` against three peers, each
 * behind the same minimal HTTP wrapper, all against the same scripted OpenAI-compatible model
 * (`startScriptedModel`), in the same run.
 *
 *   pnpm build && node --import tsx bench/peers/agent-stream.ts
 *
 * - `model`: the `openai` client calling the scripted model directly, from this process: the
 *   model's own time to first chunk, which every server adds to.
 * - the peers: this file with `BENCH_ROLE=<peer>-server`, a `node:http` server whose
 *   `POST /invoke` streams one answer from the peer's own API and writes each text delta as an
 *   SSE `message_chunk` event: `@openai/agents` (`run(agent, input, { stream: true })`,
 *   chat-completions model, tracing off), `mastra` (`@mastra/core` `Agent.stream`, the model as
 *   Mastra's OpenAI-compatible `{ id, url, apiKey }` config) and `langgraph`
 *   (`@langchain/langgraph` prebuilt `createReactAgent` over `@langchain/openai` `ChatOpenAI`
 *   with `configuration.baseURL`, `streamMode: 'messages'`).
 * - `ours`: the built API process (`apps/api/dist/main.js`, Redis + PostgreSQL, the defaults),
 *   `POST /api/agent/invoke` with `llm_config` naming the scripted model.
 * Each variant's warm-up answers must come from one streaming request to the scripted model, and
 * each server's paced warm-up must arrive as one event per model chunk, the first long before
 * the last.
 * Time to first chunk: request start → first text chunk read by the client; SAMPLES per variant,
 * the variants alternating, over a 3-chunk answer. CPU per chunk: the server process's user +
 * system time (/proc) over PACED answers of CHUNKS chunks, 1 ms apart (so each server reads one
 * chunk at a time), divided by the chunks.
 *
 * RSS per open stream: OPEN answers at once, each held open by the model after its first chunk;
 * the server's RSS delta over OPEN in the first of RSS_ROUNDS rounds (the others are printed).
 *
 * Env: SAMPLES (default 30), CHUNKS (default 1000), PACED (default 3), OPEN (default 200),
 * RSS_ROUNDS (default 3), REDIS_URL, DATABASE_URL.
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
import {
  cpuMs,
  machineLine,
  procMemory,
  sleep,
  startEntry,
  type Service,
} from '../support/processes.js';
import { unlinkPrefix } from '../support/redis.js';
import { ensurePeers, requirePeer } from './peers.js';

const SELF = fileURLToPath(import.meta.url);
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const samples = Number(process.env.SAMPLES ?? 30);
const chunkCount = Number(process.env.CHUNKS ?? 1_000);
const paced = Number(process.env.PACED ?? 3);
const open = Number(process.env.OPEN ?? 200);
const rssRoundCount = Number(process.env.RSS_ROUNDS ?? 3);
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

interface MastraModule {
  Agent: new (options: {
    id: string;
    name: string;
    instructions: string;
    model: { id: string; url: string; apiKey: string };
  }) => { stream(input: string): Promise<{ textStream: AsyncIterable<string> }> };
}
interface LangGraphPrebuiltModule {
  createReactAgent(options: { llm: unknown; tools: unknown[] }): {
    stream(
      input: { messages: Array<{ role: string; content: string }> },
      options: { streamMode: 'messages' },
    ): Promise<AsyncIterable<[{ content: unknown }, { langgraph_node?: string }]>>;
  };
}
interface LangChainOpenAIModule {
  ChatOpenAI: new (options: Record<string, unknown>) => unknown;
}

// ---------------------------------------------------------------- peer servers (children)

/** Text deltas of one answer of `model` to `message`, from a peer's own streaming API. */
type PeerStream = (message: string, model: string) => AsyncIterable<string>;

/** @openai/agents: `run(agent, input, { stream: true })`, the chat-completions model. */
function openaiAgentsStream(baseURL: string): PeerStream {
  const agents = requirePeer<AgentsModule>('@openai/agents');
  const { OpenAI: PeerOpenAI } = requirePeer<OpenAIModule>('openai');
  agents.setTracingDisabled(true);
  const client = new PeerOpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 });
  return async function* (message, model) {
    const agent = new agents.Agent({
      name: 'bench',
      instructions: 'You are a helpful assistant.',
      model: new agents.OpenAIChatCompletionsModel(client, model),
    });
    const stream = await agents.run(agent, message, { stream: true });
    for await (const event of stream)
      if (event.type === 'raw_model_stream_event' && event.data?.type === 'output_text_delta')
        yield event.data.delta ?? '';
    await stream.completed;
  };
}

/** Mastra: an `Agent` whose model is Mastra's OpenAI-compatible `{ id, url, apiKey }` config. */
function mastraStream(baseURL: string): PeerStream {
  const { Agent } = requirePeer<MastraModule>('@mastra/core/agent');
  return async function* (message, model) {
    const agent = new Agent({
      id: 'bench',
      name: 'bench',
      instructions: 'You are a helpful assistant.',
      model: { id: `scripted/${model}`, url: baseURL, apiKey: API_KEY },
    });
    const output = await agent.stream(message);
    yield* output.textStream;
  };
}

/** LangGraph: the prebuilt ReAct agent over `ChatOpenAI`, tokens with `streamMode: 'messages'`. */
function langGraphStream(baseURL: string): PeerStream {
  const { createReactAgent } = requirePeer<LangGraphPrebuiltModule>(
    '@langchain/langgraph/prebuilt',
  );
  const { ChatOpenAI } = requirePeer<LangChainOpenAIModule>('@langchain/openai');
  return async function* (message, model) {
    const llm = new ChatOpenAI({
      model,
      apiKey: API_KEY,
      configuration: { baseURL },
      maxRetries: 0,
      streaming: true,
    });
    const agent = createReactAgent({ llm, tools: [] });
    const stream = await agent.stream(
      { messages: [{ role: 'user', content: message }] },
      { streamMode: 'messages' },
    );
    // The last chunks carry usage and the finish reason with empty content.
    for await (const [chunk, meta] of stream)
      if (meta.langgraph_node === 'agent' && typeof chunk.content === 'string' && chunk.content)
        yield chunk.content;
  };
}

const PEER_STREAMS: Record<string, (baseURL: string) => PeerStream> = {
  '@openai/agents': openaiAgentsStream,
  mastra: mastraStream,
  langgraph: langGraphStream,
};

/**
 * The minimal HTTP wrapper every peer runs behind: `POST /invoke` `{ message, model }` answers
 * SSE, one `message_chunk` event per text delta as the peer yields it, then `done` (or `error`).
 */
function runPeerServer(peer: string): void {
  const stream = PEER_STREAMS[peer]!(process.env.MODEL_BASE_URL!);
  const server = createServer((request, response) => {
    if (request.url === '/healthz') return void response.end('ok');
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      void (async () => {
        const { message, model } = JSON.parse(body) as { message: string; model: string };
        response.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
        });
        for await (const delta of stream(message, model))
          response.write(`data: ${JSON.stringify({ type: 'message_chunk', content: delta })}\n\n`);
        response.end(`data: ${JSON.stringify({ type: 'done' })}\n\n`);
      })().catch((error: unknown) => {
        response.end(`data: ${JSON.stringify({ type: 'error', message: String(error) })}\n\n`);
      });
    });
  });
  server.listen(Number(process.env.PORT), '127.0.0.1');
}

// ---------------------------------------------------------------- main

/**
 * Reads an SSE response; resolves with the times of the first and the last `message_chunk` and
 * their count, and calls `onFirst` at the first.
 */
async function readChunks(response: Response, started: number, onFirst?: () => void) {
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  let buffer = '';
  let first = NaN;
  let last = NaN;
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
        last = performance.now() - started;
        if (chunks++ === 0) {
          first = last;
          onFirst?.();
        }
      } else if (event.type === 'done') done = true;
      else if (event.type === 'error') throw new Error(`stream error: ${event.message}`);
    }
  }
  if (!done) throw new Error('the stream ended without done');
  return { first, last, chunks };
}

async function main(): Promise<void> {
  const machineAtStart = machineLine();
  const versions = ensurePeers([
    '@openai/agents',
    'openai',
    '@mastra/core',
    '@langchain/langgraph',
    '@langchain/openai',
    '@langchain/core',
  ]);
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
    const peers = Object.keys(PEER_STREAMS);
    const servers = new Map<string, Service>();
    for (const peer of peers)
      servers.set(
        peer,
        await start(SELF, { BENCH_ROLE: `${peer}-server`, MODEL_BASE_URL: model.baseUrl }, [
          '--import',
          'tsx',
        ]),
      );
    servers.set('ours', api);
    const direct = new OpenAI({ baseURL: model.baseUrl, apiKey: API_KEY, maxRetries: 0 });

    let n = 0;
    /** One answer of `step` through `variant`; the model name is unique per request. */
    const once = async (variant: string, step: ScriptStep, onFirst?: () => void) => {
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
        return { name, first, last: NaN, chunks };
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
          : await fetch(`${servers.get(variant)!.url}/invoke`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ message: 'Hi', model: name }),
            });
      return { name, ...(await readChunks(response, started, onFirst)) };
    };

    const variants = ['model', ...peers, 'ours'];
    const short = () => textReply('A short streamed answer of a few words.', 3);
    for (let i = 0; i < 5; i++)
      for (const v of variants) {
        const { name, chunks } = await once(v, short());
        // Each variant must have called the scripted model itself, once, streaming.
        const requests = model.requests(name);
        if (chunks !== 3 || requests.length !== 1 || requests[0]!.body.stream !== true)
          throw new Error(`${v}: ${chunks} chunks from ${requests.length} model requests`);
      }
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
    const cpu = new Map<string, { ms: number; chunks: number }>();
    for (const v of servers.keys()) {
      // The warm-up answer also checks that the deltas arrive one by one, as the model sends
      // them: every chunk as its own event, the first long before the last.
      const { chunks, first, last } = await once(v, pacedAnswer());
      if (chunks !== chunkCount || !(first < last / 2))
        throw new Error(`${v}: ${chunks} of ${chunkCount} chunks, first at ${first}, last ${last}`);
      cpu.set(v, { ms: 0, chunks: 0 });
    }
    for (let i = 0; i < paced; i++) {
      const order = i % 2 === 0 ? [...servers] : [...servers].reverse();
      for (const [v, service] of order) {
        const before = cpuMs(service.child.pid!) ?? 0;
        const { chunks } = await once(v, pacedAnswer());
        if (chunks !== chunkCount) throw new Error(`${v}: ${chunks} of ${chunkCount} chunks`);
        const c = cpu.get(v)!;
        c.ms += (cpuMs(service.child.pid!) ?? 0) - before;
        c.chunks += chunks;
      }
    }
    const cpuPerChunk = new Map([...cpu].map(([v, c]) => [v, (c.ms * 1_000) / c.chunks]));

    /**
     * RSS per open stream: `open` answers at once, each held open by the model after its first
     * chunk; the server's RSS once every client has read its first chunk, minus its RSS before,
     * over `open`. The servers are warm from the phases above. The figure is the first round,
     * the first time each server holds that many streams: later rounds reuse the pages the first
     * one mapped and the collector freed, so they spread from about zero to the first round's
     * (they are printed, not counted).
     */
    const rssPerStream = new Map<string, number>();
    const holdOpen = async (v: string, service: Service) => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let started = 0;
      let allStarted!: () => void;
      const allFirst = new Promise<void>((resolve) => (allStarted = resolve));
      const step = (): ScriptStep => ({
        kind: 'stream',
        pieces: [{ text: 'x' }, { waitFor: held }, { text: 'y' }, { finish: 'stop' }],
      });
      await sleep(200);
      const before = procMemory(service.child.pid!);
      const answers = Array.from({ length: open }, () =>
        once(v, step(), () => {
          if (++started === open) allStarted();
        }),
      );
      // A failed answer must end the wait, not leave it hanging.
      await Promise.race([allFirst, Promise.all(answers)]);
      await sleep(200);
      const during = procMemory(service.child.pid!);
      release();
      for (const { chunks } of await Promise.all(answers))
        if (chunks !== 2) throw new Error(`${v}: a held answer had ${chunks} chunks`);
      return (during - before) / open;
    };
    const rssRounds = new Map<string, number[]>([...servers.keys()].map((v) => [v, []]));
    for (let i = 0; i < rssRoundCount; i++) {
      const order = i % 2 === 0 ? [...servers] : [...servers].reverse();
      for (const [v, service] of order) rssRounds.get(v)!.push(await holdOpen(v, service));
    }
    for (const [v, rounds] of rssRounds) rssPerStream.set(v, rounds[0]!);

    console.log(`machine at the start: ${machineAtStart}`);
    console.log(`machine at the end: ${machineLine()}`);
    console.log(`versions: ${versions.join(', ')}`);
    console.log(
      `${samples} samples per variant (alternating) of a 3-chunk answer after 5 warm-ups; CPU over ${paced} answers of ${chunkCount} chunks 1 ms apart per server (alternating), after one warm-up; RSS with ${open} streams open at once, the first of ${rssRoundCount} rounds per server (alternating)\n`,
    );
    const p = (v: string, q: number) =>
      percentile(
        [...firsts.get(v)!].sort((x, y) => x - y),
        q,
      );
    const over = (v: string) => p(v, 50) - p('model', 50);
    console.log(
      '| variant | time to first chunk p50 (ms) | p90 (ms) | p50 over the model’s own (ms) | CPU per chunk, server process (µs) | RSS per open stream (KB) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const v of variants) {
      const cpuCell = cpuPerChunk.has(v) ? fmt(cpuPerChunk.get(v)!) : '';
      const rssCell = rssPerStream.has(v) ? fmt(rssPerStream.get(v)! / 1024) : '';
      const overCell = v === 'model' ? '' : fmt(over(v));
      console.log(
        `| ${v} | ${fmt(p(v, 50))} | ${fmt(p(v, 90))} | ${overCell} | ${cpuCell} | ${rssCell} |`,
      );
    }
    for (const [v, rounds] of rssRounds)
      console.log(
        `RSS per open stream, ${v}, each round (KB): ${rounds.map((r) => fmt(r / 1024)).join(', ')}`,
      );
    console.log(
      '\n| ours ÷ peer | first chunk over the model | CPU per chunk | RSS per open stream |',
    );
    console.log('|---|---:|---:|---:|');
    for (const peer of peers)
      console.log(
        `| ÷ ${peer} | ${(over('ours') / over(peer)).toFixed(2)}× | ${(cpuPerChunk.get('ours')! / cpuPerChunk.get(peer)!).toFixed(2)}× | ${(rssPerStream.get('ours')! / rssPerStream.get(peer)!).toFixed(2)}× |`,
      );
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

const role = process.env.BENCH_ROLE;
if (role?.endsWith('-server')) runPeerServer(role.slice(0, -'-server'.length));
else {
  await main();
  process.exit(0);
}

/**
 * An agent's streamed answer, the service's `POST /api/agent/invoke` against three peers, each
 * behind the same minimal HTTP wrapper, all against the same scripted OpenAI-compatible model
 * (`startScriptedModel`), in the same run.
 *
 *   pnpm build && node --import tsx bench/peers/agent-stream.ts
 *
 * - `model`: the `openai` client calling the scripted model directly, from this process: the
 *   model's own time to first chunk, which every server adds to.
 * - the peers (`agent-peers.ts`): this file with `BENCH_ROLE=<peer>-server`, a `node:http`
 *   server whose `POST /invoke` streams one answer from the peer's own API and writes each text
 *   delta as an SSE `message_chunk` event: `@openai/agents` (`run(agent, input, { stream: true
 *   })`, chat-completions model, tracing off), `mastra` (`@mastra/core` `Agent.stream`, the
 *   model as Mastra's OpenAI-compatible `{ id, url, apiKey }` config) and `langgraph`
 *   (`@langchain/langgraph` prebuilt `createReactAgent` over `@langchain/openai` `ChatOpenAI`
 *   with `configuration.baseURL`, `streamMode: 'messages'`).
 * - `ours`: the built API process (`apps/api/dist/main.js`, Redis + PostgreSQL, the defaults),
 *   `POST /api/agent/invoke` with `llm_config` naming the scripted model.
 * Each variant's warm-up answers must come from one streaming request to the scripted model, and
 * each server's paced warm-up must arrive as one event per model chunk, the first long before
 * the last.
 *
 * Time to first chunk: request start → first text chunk read by the client; SAMPLES per variant,
 * the variants alternating, over a 3-chunk answer.
 *
 * CPU per chunk: the server process's CPU over PACED answers of CHUNKS chunks, 1 ms apart (so
 * each server reads one chunk at a time), divided by the chunks.
 *
 * RSS per open stream: OPEN answers at once, each held open by the model after its first chunk;
 * the server's RSS delta over OPEN in the first of RSS_ROUNDS rounds (the others are printed).
 * Live heap per open stream (HEAP_ROUNDS rounds, after every other phase; none by default): the
 * same OPEN streams, measured by a heap snapshot of the server before and while they are open
 * (`support/heap-snapshot.ts`: what is reachable after a full collection), with the kinds of
 * object that grew most per stream.
 *
 * One tool call (`agent-stream-tool.ts`, after the RSS rounds): the model answers first with one
 * `write_todos` call, the server runs the tool (ours: its built-in planning tool; a peer: the
 * same tool defined with its own tool API), and the model's second request streams 3 chunks of
 * text. TOOL_SAMPLES per variant, alternating, after 3 warm-ups that check the two requests and
 * the tool's result in the second: time to the first text chunk (the model's own: the two
 * requests made directly) and the server's CPU per run; each followed by a text-only run, so
 * that what the tool step adds is read in the same phase.
 *
 * Concurrent-stream limit (`agent-stream-limit.ts`): the largest number of answers of
 * STREAM_CHUNKS chunks PACE_MS apart one process streams at once with the p99 per-chunk delay
 * (arrival at the client − the model's send, over the middle of the answers: EDGE of each
 * answer's chunks left out at either end) within BOUND_MS; LEVELS tried in order, the gap
 * to the first failed level halved REFINE times; each level TRIALS times, the median trial
 * deciding. The model's own (`model`, the same streams read directly) is ramped alongside as
 * this process's own ceiling. LIMIT=0 skips it.
 *
 * Env: SAMPLES (default 30), TOOL_SAMPLES (default SAMPLES), CHUNKS (default 1000), PACED
 * (default 3), OPEN (default 1000), RSS_ROUNDS (default 3), LEVELS (default
 * 25,50,100,200,400,800), STREAM_CHUNKS (default 150), PACE_MS (default 20), RAMP_MS (default
 * 1000), BOUND_MS (default 50), EDGE (default 0.1), REFINE (default 2), TRIALS (default 3),
 * HEAP_ROUNDS (default 0; the servers then start with `--heapsnapshot-signal`), CPU_PROF_DIR
 * (each server writes a V8 CPU profile into `<dir>/<variant>/` when it stops; none by default),
 * LIMIT (default 1), PEERS (default all: `@openai/agents,mastra,langgraph`), OURS_STORE
 * (`pglite`: ours as the all-in-one on PGlite in a fresh DATA_DIR, no Redis; default the
 * api role on PostgreSQL and Redis), SERVICE_DEFAULTS (default 1: ours starts with what
 * `npm start` gives a service, scripts/service-defaults.mjs: `--max-semi-space-size=4` and
 * `MALLOC_TRIM_THRESHOLD_=131072`; `0`: Node's own defaults, as the peers run), REDIS_URL,
 * DATABASE_URL.
 */
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../../scripts/service-defaults.mjs';
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
  invokeService,
  machineLine,
  oneUserApiEnv,
  procMemory,
  sleep,
  startEntry,
  type Service,
} from '../support/processes.js';
import { unlinkPrefix } from '../support/redis.js';
import {
  heapGrowth,
  heapSnapshotFlags,
  takeHeapSnapshot,
  type HeapSummary,
} from '../support/heap-snapshot.js';
import { API_KEY, PEER_STREAMS, runPeerServer } from './agent-peers.js';
import { readChunks, streamChunks } from './agent-stream-client.js';
import {
  findLimits,
  type LimitOptions,
  type LimitResult,
  type OpenStream,
} from './agent-stream-limit.js';
import { directToolRun, toolRun, toolRunProblem } from './agent-stream-tool.js';
import { ensurePeers } from './peers.js';

const SELF = fileURLToPath(import.meta.url);
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const samples = Number(process.env.SAMPLES ?? 30);
const toolSamples = Number(process.env.TOOL_SAMPLES ?? samples);
const chunkCount = Number(process.env.CHUNKS ?? 1_000);
const paced = Number(process.env.PACED ?? 3);
// 1,000, not fewer: a round's RSS growth holds a few MB of noise (where the young generation and
// the allocator stand when it starts), which at 200 streams moved the per-stream figure 3-10x
// between runs; at 1,000 the first round stayed within 10 % (docs/BENCHMARKS.md, tenth session).
const open = Number(process.env.OPEN ?? 1000);
/** Each server writes a V8 CPU profile into `<CPU_PROF_DIR>/<variant>/` when it exits. */
const cpuProfDir = process.env.CPU_PROF_DIR;
const rssRoundCount = Number(process.env.RSS_ROUNDS ?? 3);
const heapRoundCount = Number(process.env.HEAP_ROUNDS ?? 0);
const limitOptions: LimitOptions = {
  levels: (process.env.LEVELS ?? '25,50,100,200,400,800').split(',').map(Number),
  chunks: Number(process.env.STREAM_CHUNKS ?? 150),
  paceMs: Number(process.env.PACE_MS ?? 20),
  rampMs: Number(process.env.RAMP_MS ?? 1_000),
  boundMs: Number(process.env.BOUND_MS ?? 50),
  edge: Number(process.env.EDGE ?? 0.1),
  refine: Number(process.env.REFINE ?? 2),
  trials: Number(process.env.TRIALS ?? 3),
};
const measureLimit = process.env.LIMIT !== '0';
/** The peers to run (names of `PEER_STREAMS`, comma-separated); all of them by default. */
const peerNames = process.env.PEERS?.split(',').filter(Boolean);
/** `pglite`: ours on PGlite (a fresh `DATA_DIR`) instead of PostgreSQL. */
const oursStore = process.env.OURS_STORE === 'pglite' ? 'pglite' : 'postgres';
const serviceDefaults = process.env.SERVICE_DEFAULTS !== '0';

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
    const snapshotDir = join(tmpdir(), `bench-agent-heap-${process.pid}`);
    if (heapRoundCount > 0) {
      mkdirSync(snapshotDir, { recursive: true });
      cleanups.push(() => rm(snapshotDir, { recursive: true, force: true }));
    }
    const start = async (
      name: string,
      entry: string,
      env: Record<string, string>,
      execArgv: string[] = [],
    ) => {
      const flags = [
        ...(heapRoundCount > 0 ? heapSnapshotFlags(snapshotDir) : []),
        ...(cpuProfDir
          ? ['--cpu-prof', `--cpu-prof-dir=${join(cpuProfDir, name.replace(/\W/g, '_'))}`]
          : []),
        ...execArgv,
      ];
      const service = await startEntry(entry, env, { execArgv: flags });
      children.push(service.child);
      cleanups.push(() => service.stop());
      return service;
    };
    const dataDir = oursStore === 'pglite' ? mkdtempSync(join(tmpdir(), 'bench-agent-')) : '';
    if (dataDir) cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    // On PGlite: the all-in-one (as `npm start`: no Redis, PGlite in DATA_DIR).
    const service = invokeService(
      '',
      dataDir ? { dataDir } : { redisUrl, prefix, databaseUrl, schema: schema.schema },
    );
    const api: Service = await start(
      'ours',
      service.entry,
      { ...service.env, ...oneUserApiEnv(pair), ...(serviceDefaults ? SERVICE_ENV : {}) },
      serviceDefaults ? [...SERVICE_NODE_FLAGS] : [],
    );
    const peers = Object.keys(PEER_STREAMS).filter((peer) => peerNames?.includes(peer) ?? true);
    const servers = new Map<string, Service>();
    for (const peer of peers)
      servers.set(
        peer,
        await start(peer, SELF, { BENCH_ROLE: `${peer}-server`, MODEL_BASE_URL: model.baseUrl }, [
          '--import',
          'tsx',
        ]),
      );
    servers.set('ours', api);
    const direct = new OpenAI({ baseURL: model.baseUrl, apiKey: API_KEY, maxRetries: 0 });

    let n = 0;
    /** `message` to a server, for `name`'s script; `tool`: with the one tool. */
    const post = (variant: string, name: string, message: string, tool: boolean) =>
      variant === 'ours'
        ? fetch(`${api.url}/api/agent/invoke`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              message,
              llm_config: { baseUrl: model.baseUrl, apiKey: API_KEY, modelName: name },
            }),
          })
        : fetch(`${servers.get(variant)!.url}/invoke`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ message, model: name, tool }),
          });
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
      const response = await post(variant, name, 'Hi', false);
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
    /** `open` answers held open through `v`; `measure` taken before and once all are open. */
    const holdOpen = async <T>(v: string, measure: () => T | Promise<T>) => {
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
      const before = await measure();
      const answers = Array.from({ length: open }, () =>
        once(v, step(), () => {
          if (++started === open) allStarted();
        }),
      );
      // A failed answer must end the wait, not leave it hanging.
      await Promise.race([allFirst, Promise.all(answers)]);
      await sleep(200);
      const during = await measure();
      release();
      for (const { chunks } of await Promise.all(answers))
        if (chunks !== 2) throw new Error(`${v}: a held answer had ${chunks} chunks`);
      return { before, during };
    };
    const rssRounds = new Map<string, number[]>([...servers.keys()].map((v) => [v, []]));
    for (let i = 0; i < rssRoundCount; i++) {
      const order = i % 2 === 0 ? [...servers] : [...servers].reverse();
      for (const [v, service] of order) {
        const { before, during } = await holdOpen(v, () => procMemory(service.child.pid!));
        rssRounds.get(v)!.push((during - before) / open);
      }
    }
    for (const [v, rounds] of rssRounds) rssPerStream.set(v, rounds[0]!);

    // After the RSS rounds, so that their first round is still each server's first OPEN streams
    // on a heap only the text-only phases grew.
    /** One one-tool-call run through `variant`: checked, then its time to the first text. */
    const toolOnce = async (v: string) => {
      const name = `bench-${n++}`;
      model.script(name, toolRun());
      const started = performance.now();
      const { first, chunks } =
        v === 'model'
          ? await directToolRun(direct, name)
          : await readChunks(await post(v, name, 'Hi', true), started);
      const problem = toolRunProblem(model.requests(name), chunks);
      if (problem) throw new Error(`${v}, one tool call: ${problem}`);
      return first;
    };
    /** CPU of a server process per run, ms: the sum over its runs, and the runs. */
    const cpuPerRun = () => new Map([...servers.keys()].map((v) => [v, { ms: 0, runs: 0 }]));
    /** Runs `run` on `variant`, adding the server process's CPU meanwhile to `cpu`. */
    const metered = async <T>(
      cpu: Map<string, { ms: number; runs: number }>,
      v: string,
      run: () => Promise<T>,
    ) => {
      const pid = servers.get(v)?.child.pid;
      const before = pid ? (cpuMs(pid) ?? 0) : 0;
      const result = await run();
      const c = cpu.get(v);
      if (pid && c) {
        c.ms += (cpuMs(pid) ?? 0) - before;
        c.runs++;
      }
      return result;
    };
    for (let i = 0; i < 3; i++) for (const v of variants) await toolOnce(v);
    // Text-only runs alongside, so that what the tool step adds is read in one phase (the
    // servers get cheaper per run as the phases before warm them).
    const toolFirsts = new Map<string, number[]>(variants.map((v) => [v, []]));
    const textFirsts = new Map<string, number[]>(variants.map((v) => [v, []]));
    const toolCpu = cpuPerRun();
    const textCpu = cpuPerRun();
    for (let i = 0; i < toolSamples; i++) {
      const order = i % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) {
        toolFirsts.get(v)!.push(await metered(toolCpu, v, () => toolOnce(v)));
        textFirsts.get(v)!.push((await metered(textCpu, v, () => once(v, short()))).first);
      }
    }

    /** Live heap per open stream, per server and round, with the kinds that grew most. */
    const heapRounds = new Map<string, Array<{ before: HeapSummary; during: HeapSummary }>>(
      [...servers.keys()].map((v) => [v, []]),
    );
    for (let i = 0; i < heapRoundCount; i++) {
      const order = i % 2 === 0 ? [...servers] : [...servers].reverse();
      for (const [v, service] of order)
        heapRounds
          .get(v)!
          .push(await holdOpen(v, () => takeHeapSnapshot(service.child.pid!, snapshotDir)));
    }

    const machineBeforeLimit = machineLine();
    const limitLines: string[] = [];
    let limits: Map<string, LimitResult> | undefined;
    if (measureLimit) {
      const openers = new Map<string, OpenStream>([
        [
          'model',
          (name, onChunk, signal) =>
            streamChunks(
              `${model.baseUrl}/chat/completions`,
              { authorization: `Bearer ${API_KEY}` },
              { model: name, messages: [{ role: 'user', content: 'Hi' }], stream: true },
              'openai',
              onChunk,
              signal,
            ),
        ],
        ...peers.map((peer): [string, OpenStream] => [
          peer,
          (name, onChunk, signal) =>
            streamChunks(
              `${servers.get(peer)!.url}/invoke`,
              {},
              { message: 'Hi', model: name },
              'agent',
              onChunk,
              signal,
            ),
        ]),
        [
          'ours',
          (name, onChunk, signal) =>
            streamChunks(
              `${api.url}/api/agent/invoke`,
              { authorization: `Bearer ${token}` },
              {
                message: 'Hi',
                llm_config: { baseUrl: model.baseUrl, apiKey: API_KEY, modelName: name },
              },
              'agent',
              onChunk,
              signal,
            ),
        ],
      ]);
      const script = (steps: ScriptStep[]) => {
        const name = `bench-${n++}`;
        model.script(name, steps);
        return name;
      };
      /** The model's own is metered in this process, which also reads every stream. */
      const cpuOf = (v: string) => {
        if (v === 'model') {
          const { user, system } = process.cpuUsage();
          return (user + system) / 1_000;
        }
        return cpuMs(servers.get(v)!.child.pid!) ?? NaN;
      };
      limits = await findLimits(openers, script, limitOptions, 'model', cpuOf, (line) => {
        console.error(line);
        limitLines.push(line);
      });
    }

    console.log(`machine at the start: ${machineAtStart}`);
    if (measureLimit) console.log(`machine before the limit ramp: ${machineBeforeLimit}`);
    console.log(`machine at the end: ${machineLine()}`);
    console.log(`versions: ${versions.join(', ')}`);
    console.log(
      `ours: ${oursStore}, ${serviceDefaults ? `started as npm start does (${SERVICE_NODE_FLAGS.join(' ')})` : "Node's own defaults"}`,
    );
    console.log(
      `${samples} samples per variant (alternating) of a 3-chunk answer after 5 warm-ups; ${toolSamples} one-tool-call runs per variant (alternating) after 3 warm-ups; CPU over ${paced} answers of ${chunkCount} chunks 1 ms apart per server (alternating), after one warm-up; RSS with ${open} streams open at once, the first of ${rssRoundCount} rounds per server (alternating)\n`,
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
    for (const [v, rounds] of heapRounds) {
      if (rounds.length === 0) continue;
      const perStream = rounds.map(({ before, during }) => (during.bytes - before.bytes) / open);
      console.log(
        `live heap per open stream, ${v}, each round (KB): ${perStream.map((b) => fmt(b / 1024)).join(', ')}; heap before each round (MB): ${rounds.map(({ before }) => fmt(before.bytes / 2 ** 20)).join(', ')}`,
      );
      const { before, during } = rounds.at(-1)!;
      for (const { kind, count, bytes } of heapGrowth(before, during, open))
        console.log(`  last round, per stream: ${kind}: ${fmt(count)} objects, ${fmt(bytes)} B`);
    }

    const pick = (values: Map<string, number[]>, v: string, q: number) =>
      percentile(
        [...values.get(v)!].sort((x, y) => x - y),
        q,
      );
    const tp = (v: string, q: number) => pick(toolFirsts, v, q);
    const toolOver = (v: string) => tp(v, 50) - tp('model', 50);
    const textOver = (v: string) => pick(textFirsts, v, 50) - pick(textFirsts, 'model', 50);
    const perRun = (cpu: Map<string, { ms: number; runs: number }>, v: string) =>
      cpu.get(v)!.ms / cpu.get(v)!.runs;
    console.log(
      `\n${toolSamples} one-tool-call runs per variant, each followed by a text-only run (the same 3-chunk answer); the model's own: the two requests made directly`,
    );
    console.log(
      '| variant | one tool call: first text chunk p50 (ms) | p90 (ms) | p50 over the model’s own (ms) | CPU per run, server process (ms) | text-only alongside: first chunk p50 over the model’s own (ms) | CPU per run (ms) | the tool step adds: time (ms) | CPU (ms) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const v of variants) {
      const cells =
        v === 'model'
          ? ['', '', '', '', '', '']
          : [
              toolOver(v),
              perRun(toolCpu, v),
              textOver(v),
              perRun(textCpu, v),
              toolOver(v) - textOver(v),
              perRun(toolCpu, v) - perRun(textCpu, v),
            ].map(fmt);
      console.log(`| ${v} | ${fmt(tp(v, 50))} | ${fmt(tp(v, 90))} | ${cells.join(' | ')} |`);
    }

    if (limits) {
      const { chunks, paceMs, rampMs, boundMs } = limitOptions;
      console.log(
        `\nConcurrent streams, ${chunks} chunks ${paceMs} ms apart each, started over ${rampMs} ms; the limit is the most with the p99 per-chunk delay ≤ ${boundMs} ms over the middle of the answers (${limitOptions.edge * 100} % of each answer's chunks left out at either end). Each level:`,
      );
      for (const line of limitLines) console.log(line);
      console.log(
        '\n| variant | concurrent-stream limit | chunks/s at the limit | first failed level | p99 per-chunk delay at the limit (ms) | CPU per chunk at the limit (µs) |',
      );
      console.log('|---|---:|---:|---:|---:|---:|');
      for (const [v, r] of limits) {
        const at = r.levels.find((l) => l.count === r.limit);
        console.log(
          `| ${v} | ${r.limit} | ${Math.round((r.limit * 1_000) / paceMs)} | ${r.failedAt ?? '—'} | ${at ? fmt(at.p99) : ''} | ${at ? fmt(at.cpuPerChunkUs) : ''} |`,
        );
      }
    }

    console.log(
      '\n| ours ÷ peer | first chunk over the model | CPU per chunk | RSS per open stream | one tool call: first text over the model | CPU per tool run | concurrent-stream limit |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
    for (const peer of peers)
      console.log(
        `| ÷ ${peer} | ${ratio(over('ours'), over(peer))} | ${ratio(cpuPerChunk.get('ours')!, cpuPerChunk.get(peer)!)} | ${ratio(rssPerStream.get('ours')!, rssPerStream.get(peer)!)} | ${ratio(toolOver('ours'), toolOver(peer))} | ${ratio(perRun(toolCpu, 'ours'), perRun(toolCpu, peer))} | ${limits ? ratio(limits.get('ours')!.limit, limits.get(peer)!.limit) : ''} |`,
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

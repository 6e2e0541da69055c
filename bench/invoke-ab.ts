/**
 * Time to the first text chunk of a text-only invoke, two builds of the api role side by side:
 * each round starts one build's api (PostgreSQL and Redis, as `npm start` gives a service),
 * sends invokes one after another for DURATION_S seconds against the in-process scripted model,
 * and stops it; the builds alternate, the order swapping every round.
 *
 *   TREES=/path/to/before,/path/to/after ROUNDS=6 DURATION_S=10 npx tsx bench/invoke-ab.ts
 *
 * Each tree must be built (`node scripts/build.mjs` in it). Prints each round's p50 and, per
 * build, the median p50 of its rounds and what it spends over the model's own first chunk (the
 * model's p50 read directly, in the same run), and the CPU per run of the api process and of
 * Redis (pooled over the build's rounds: what a latency change costs in throughput). Env: TREES
 * (default this checkout twice), ROUNDS (default 6), DURATION_S (default 10), CONCURRENCY
 * (invokes in flight, each sent when the one before it ended; default 1), ENGINE (`postgres`, the
 * default: the api role on REDIS_URL and DATABASE_URL; `embedded`: the all-in-one with neither,
 * PGlite in a fresh DATA_DIR each round, as `npm start` runs it).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../scripts/service-defaults.mjs';
import { importKeys, signAccessToken } from '../packages/auth/src/index.js';
import {
  createTestSchema,
  startScriptedModel,
  textReply,
  uniquePrefix,
} from '../packages/testing/src/index.js';
import { readChunks } from './peers/agent-stream-client.js';
import { fmt, percentile } from './support/open-loop.js';
import {
  cpuMs,
  invokeService,
  machineLine,
  oneUserApiEnv,
  ROOT,
  startEntry,
} from './support/processes.js';
import { redisServer, unlinkPrefix } from './support/redis.js';

const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const trees = (process.env.TREES ?? `${ROOT},${ROOT}`).split(',').map((t) => resolve(t));
const rounds = Number(process.env.ROUNDS ?? 6);
const durationMs = Number(process.env.DURATION_S ?? 10) * 1_000;
const concurrency = Number(process.env.CONCURRENCY ?? 1);
const embedded = (process.env.ENGINE ?? 'postgres') === 'embedded';
if (!embedded && process.env.ENGINE !== undefined && process.env.ENGINE !== 'postgres')
  throw new Error('ENGINE must be postgres or embedded');
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
const answer = () => textReply('A short streamed answer of a few words.', 3);

async function main(): Promise<void> {
  console.log(`machine at the start: ${machineLine()}`);
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const token = (await signAccessToken(await importKeys(pair), 'bench')).accessToken;
  const model = await startScriptedModel();
  const schema = await createTestSchema('bench_invoke_ab');
  const prefix = uniquePrefix('bench-invoke-ab');
  let n = 0;
  try {
    // The model's own first chunk, read directly from this process.
    const direct = new OpenAI({ baseURL: model.baseUrl, apiKey: 'sk-bench', maxRetries: 0 });
    const own: number[] = [];
    for (let i = 0; i < 200; i++) {
      const name = `ab-${n++}`;
      model.script(name, [answer()]);
      const started = performance.now();
      const stream = await direct.chat.completions.create({
        model: name,
        messages: [{ role: 'user', content: 'Hi' }],
        stream: true,
      });
      let first = NaN;
      for await (const chunk of stream)
        if (chunk.choices[0]?.delta.content && Number.isNaN(first))
          first = performance.now() - started;
      if (i >= 20) own.push(first);
    }
    const modelP50 = median(own);
    const redisPid = embedded ? undefined : (await redisServer(redisUrl)).pid;
    const p50s = new Map<string, number[]>(trees.map((tree, i) => [`${i}:${tree}`, []]));
    /** Per build: runs measured, and the CPU (ms) the api and Redis spent on them. */
    const cost = new Map(
      [...p50s.keys()].map((key): [string, { runs: number; api: number; redis: number }] => [
        key,
        { runs: 0, api: 0, redis: 0 },
      ]),
    );
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [...p50s.keys()] : [...p50s.keys()].reverse();
      for (const key of order) {
        const tree = key.slice(key.indexOf(':') + 1);
        const dataDir = embedded ? mkdtempSync(join(tmpdir(), 'bench-invoke-ab-')) : '';
        const service = invokeService(
          `${tree}/`,
          embedded ? { dataDir } : { redisUrl, prefix, databaseUrl, schema: schema.schema },
        );
        const api = await startEntry(
          service.entry,
          { ...service.env, ...oneUserApiEnv(pair), ...SERVICE_ENV },
          { execArgv: [...SERVICE_NODE_FLAGS] },
        );
        try {
          const firsts: number[] = [];
          const invoke = async () => {
            const name = `ab-${n++}`;
            model.script(name, [answer()]);
            const started = performance.now();
            const response = await fetch(`${api.url}/api/agent/invoke`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({
                message: 'Hi',
                llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-bench', modelName: name },
              }),
            });
            return (await readChunks(response, started)).first;
          };
          /** `concurrency` invokes in flight until `done`, each started when one ended. */
          const drive = (done: () => boolean, firstChunks?: number[]) =>
            Promise.all(
              Array.from({ length: concurrency }, async () => {
                while (!done()) {
                  const first = await invoke();
                  firstChunks?.push(first);
                }
              }),
            );
          // The first runs of a fresh process load and compile what the rest reuse.
          let warmUps = 0;
          await drive(() => warmUps++ >= 50);
          const apiBefore = cpuMs(api.child.pid!) ?? 0;
          const redisBefore = redisPid ? (cpuMs(redisPid) ?? 0) : 0;
          const end = Date.now() + durationMs;
          await drive(() => Date.now() >= end, firsts);
          const spent = cost.get(key)!;
          spent.runs += firsts.length;
          spent.api += (cpuMs(api.child.pid!) ?? 0) - apiBefore;
          if (redisPid) spent.redis += (cpuMs(redisPid) ?? 0) - redisBefore;
          const p50 = median(firsts);
          p50s.get(key)!.push(p50);
          console.log(
            `round ${round + 1}, ${key}: ${firsts.length} runs, first chunk p50 ${fmt(p50)} ms`,
          );
        } finally {
          await api.stop();
          if (dataDir) rmSync(dataDir, { recursive: true, force: true });
        }
      }
    }
    console.log(`\nthe model's own first chunk p50: ${fmt(modelP50)} ms`);
    for (const [key, values] of p50s) {
      const spent = cost.get(key)!;
      const redis = redisPid ? `, Redis ${fmt(spent.redis / spent.runs)} ms` : '';
      console.log(
        `${key}: median of the rounds' p50 ${fmt(median(values))} ms, over the model's own ${fmt(median(values) - modelP50)} ms; CPU per run: api ${fmt(spent.api / spent.runs)} ms${redis}`,
      );
    }
    console.log(`machine at the end: ${machineLine()}`);
  } finally {
    await model.close();
    await schema.drop();
    await unlinkPrefix(redisUrl, prefix);
  }
}

await main();

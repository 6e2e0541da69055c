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
 * model's p50 read directly, in the same run). Env: TREES (default this checkout twice), ROUNDS
 * (default 6), DURATION_S (default 10), ENGINE (`postgres`, the default: the api role on
 * REDIS_URL and DATABASE_URL; `embedded`: the all-in-one with neither, PGlite in a fresh
 * DATA_DIR each round, as `npm start` runs it).
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
  invokeService,
  machineLine,
  oneUserApiEnv,
  ROOT,
  startEntry,
} from './support/processes.js';
import { unlinkPrefix } from './support/redis.js';

const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const trees = (process.env.TREES ?? `${ROOT},${ROOT}`).split(',').map((t) => resolve(t));
const rounds = Number(process.env.ROUNDS ?? 6);
const durationMs = Number(process.env.DURATION_S ?? 10) * 1_000;
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
    const p50s = new Map<string, number[]>(trees.map((tree, i) => [`${i}:${tree}`, []]));
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
          const end = Date.now() + durationMs;
          for (let i = 0; Date.now() < end; i++) {
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
            const { first } = await readChunks(response, started);
            // The first runs of a fresh process load and compile what the rest reuse.
            if (i >= 50) firsts.push(first);
          }
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
    for (const [key, values] of p50s)
      console.log(
        `${key}: median of the rounds' p50 ${fmt(median(values))} ms, over the model's own ${fmt(median(values) - modelP50)} ms`,
      );
    console.log(`machine at the end: ${machineLine()}`);
  } finally {
    await model.close();
    await schema.drop();
    await unlinkPrefix(redisUrl, prefix);
  }
}

await main();

/**
 * How much ingesting a 10 MB document (text, then HTML) delays everything else in the
 * all-in-one: `/healthz` latency measured without pause while the document is uploaded and
 * ingested, against the same probe on the idle service (the baseline, same run); the waits
 * between the chunks of an open SSE stream (a scripted model answering in pieces 100 ms apart)
 * during the same ingestion; and the time from upload to `ready`. Each build runs without
 * embeddings and with them (`EMBEDDINGS_*` pointed at a scripted endpoint in a child process
 * answering 1536 dense numbers per chunk, bench/support/embeddings-server.ts). Several builds
 * can be compared in one run (e.g. before and after a change):
 * BUILDS=`name=path/to/apps/all-in-one/dist/main.js,...`.
 *
 *   pnpm build && node --import tsx bench/ingest-event-loop.ts
 *
 * Env: BUILDS (default this checkout's build), ROUNDS (default 3), EMBEDDINGS (`off,on`),
 * DOCS (`text,html`).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { resolveKeys, signAccessToken } from '../packages/auth/src/index.js';
import {
  proseText,
  startScriptedModel,
  startServiceProcess,
} from '../packages/testing/src/index.js';
import { invoke } from '../tests/agent-helpers.js';
import { keyFiles, tempDir } from '../tests/helpers.js';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const MODES = (process.env.EMBEDDINGS ?? 'off,on').split(',') as Array<'off' | 'on'>;
const BUILDS = (process.env.BUILDS ?? 'current=apps/all-in-one/dist/main.js')
  .split(',')
  .map((entry) => {
    const [name, path] = entry.split('=');
    return { name: name!, path: path! };
  });

const DOCS = (process.env.DOCS ?? 'text,html').split(',');
const allDocuments = {
  text: () => proseText(10_000_000),
  html: () =>
    `<html><body>${proseText(9_990_000)
      .split('\n\n')
      .map((p) => `<p>${p}</p>`)
      .join('\n')}</body></html>`,
};
const documents = Object.fromEntries(
  Object.entries(allDocuments)
    .filter(([type]) => DOCS.includes(type))
    .map(([type, make]) => [type, make()]),
);
// The upload bodies, encoded before any probing: this process must not stall its own probes.
const uploads = Object.fromEntries(
  Object.entries(documents).map(([type, content]) => [
    type,
    Buffer.from(JSON.stringify({ name: type, content, type })),
  ]),
);

const keys = keyFiles();
const pair = await resolveKeys({ publicKeyPem: keys.publicKey, privateKeyPem: keys.privateKey });
const token = (await signAccessToken(pair, 'bench')).accessToken;

// The chat model of the open stream (cheap: one short piece per 100 ms), in this process.
const chat = await startScriptedModel();
const CHAT_MODEL = 'slow-talker';
// The embeddings endpoint, in a child process: its answers are megabytes of JSON.
const embeddingsChild = spawn(
  process.execPath,
  ['--import', 'tsx', 'bench/support/embeddings-server.ts'],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
process.on('exit', () => embeddingsChild.kill('SIGTERM'));
const [embeddingsUrl] = (await once(
  createInterface({ input: embeddingsChild.stdout! }),
  'line',
)) as [string];

/** Probes /healthz back to back until `until` resolves; the latencies in ms. */
async function probe(url: string, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const latencies: number[] = [];
  while (!done) {
    const t0 = performance.now();
    await (await fetch(`${url}/healthz`)).text();
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
};

console.log(
  `# ingest-event-loop: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, ` +
    `node ${process.version}, ${ROUNDS} rounds, builds ${BUILDS.map((b) => b.name).join(' / ')}, ` +
    `embeddings ${MODES.join(' / ')}`,
);
const results: Array<Record<string, unknown>> = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const build of BUILDS) {
    for (const mode of MODES) {
      const service = await startServiceProcess({
        entry: build.path,
        env: {
          DATA_DIR: tempDir('bench-ingest'),
          JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
          JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
          MCP_ALLOW_PRIVATE_NETWORKS: 'true',
          ...(mode === 'on'
            ? { EMBEDDINGS_BASE_URL: embeddingsUrl, EMBEDDINGS_MODEL: 'dense-1536' }
            : {}),
        },
        timeoutMs: 120_000,
      });
      const api = async (path: string, body?: unknown) =>
        (await fetch(`${service.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(body === undefined
            ? {}
            : { body: Buffer.isBuffer(body) ? body : JSON.stringify(body) }),
        }).then((r) => r.json())) as Record<string, unknown>;
      const idle = stats(await probe(service.url, new Promise((r) => setTimeout(r, 2_000))));
      results.push({ build: build.name, mode, round, phase: 'idle', ...idle });
      const base = await api('/api/knowledge-bases', { name: 'bench' });
      for (const type of DOCS) {
        // A stream open for the whole ingestion: 3,000 pieces 100 ms apart.
        chat.script(CHAT_MODEL, [
          {
            kind: 'stream',
            pieces: [
              ...Array.from({ length: 3_000 }, (_, i) => [
                { text: `w${i} ` },
                { waitMs: 100 },
              ]).flat(),
              { finish: 'stop' },
            ],
          },
        ]);
        const stream = await invoke(service.url, token, {
          message: 'Talk slowly',
          llm_config: { baseUrl: chat.baseUrl, apiKey: 'sk-x', modelName: CHAT_MODEL },
        });
        await stream.waitFor((e) => e.data.type === 'message_chunk', 30_000);
        const started = performance.now();
        const ingested = (async () => {
          const doc = await api(`/api/knowledge-bases/${String(base.id)}/documents`, uploads[type]);
          for (;;) {
            const list = (await api(`/api/knowledge-bases/${String(base.id)}/documents`)) as {
              documents: Array<{ id: string; status: string }>;
            };
            const status = list.documents.find((d) => d.id === doc.id)?.status;
            if (status === 'ready' || status === 'failed') return status;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        let latencies: number[];
        try {
          latencies = await probe(service.url, ingested);
        } catch (error) {
          // The service died: say so with its last words, and go on with the next case.
          console.error(`${build.name} ${mode} ${type}: ${String(error)}`);
          console.error([...service.stdout, ...service.stderr].slice(-5).join('\n'));
          results.push({
            build: build.name,
            mode,
            round,
            phase: `ingest ${type}`,
            status: 'crashed',
          });
          ingested.catch(() => undefined);
          stream.close();
          break;
        }
        const readyAt = performance.now();
        // Waits between the stream's chunks from the upload to `ready` (both ends included).
        const chunkTimes = stream.arrivals.filter(
          (at, i) =>
            stream.events[i]!.data.type === 'message_chunk' && at >= started && at <= readyAt,
        );
        const edges = [started, ...chunkTimes, readyAt];
        const gaps = stats(edges.slice(1).map((at, i) => at - edges[i]!));
        stream.close();
        results.push({
          build: build.name,
          mode,
          round,
          phase: `ingest ${type}`,
          status: await ingested,
          ingestMs: readyAt - started,
          ...stats(latencies),
          gapP99: gaps.p99,
          gapMax: gaps.max,
          chunks: chunkTimes.length,
        });
        console.error(JSON.stringify(results.at(-1)));
      }
      await service.stop('SIGTERM');
    }
  }
}
embeddingsChild.kill('SIGTERM');
await chat.close();

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const mode of MODES) {
  for (const phase of ['idle', ...DOCS.map((type) => `ingest ${type}`)]) {
    for (const build of BUILDS) {
      const rows = results.filter(
        (r) => r.build === build.name && r.mode === mode && r.phase === phase,
      );
      const pick = (key: string) => median(rows.map((r) => Number(r[key] ?? 0)));
      const idleP99 = median(
        results
          .filter((r) => r.build === build.name && r.mode === mode && r.phase === 'idle')
          .map((r) => Number(r.p99)),
      );
      console.log(
        JSON.stringify({
          build: build.name,
          embeddings: mode,
          phase,
          healthzP50Ms: Number(pick('p50').toFixed(2)),
          healthzP99Ms: Number(pick('p99').toFixed(2)),
          healthzMaxMs: Number(pick('max').toFixed(1)),
          p99VsIdle: Number((pick('p99') / idleP99).toFixed(2)),
          ...(phase === 'idle'
            ? {}
            : {
                streamGapP99Ms: Number(pick('gapP99').toFixed(1)),
                streamGapMaxMs: Number(pick('gapMax').toFixed(1)),
                ingestMs: Math.round(pick('ingestMs')),
                failed: rows.filter((r) => r.status !== 'ready').length,
              }),
        }),
      );
    }
  }
}

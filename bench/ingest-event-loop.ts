/**
 * How much ingesting a 10 MB document (text, then HTML) delays everything else in the
 * all-in-one: `/healthz` latency measured without pause while the document is uploaded and
 * ingested, against the same probe on the idle service (the baseline, same run), plus the time
 * from upload to `ready`. Several builds can be compared in one run (e.g. before and after
 * moving the split into a worker thread): BUILDS=`name=path/to/apps/all-in-one/dist/main.js,...`.
 *
 *   pnpm build && node --import tsx bench/ingest-event-loop.ts
 *
 * Env: BUILDS (default this checkout's build), ROUNDS (default 3).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { resolveKeys, signAccessToken } from '../packages/auth/src/index.js';
import { proseText, startServiceProcess } from '../packages/testing/src/index.js';
import { keyFiles, tempDir } from '../tests/helpers.js';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const BUILDS = (process.env.BUILDS ?? 'current=apps/all-in-one/dist/main.js')
  .split(',')
  .map((entry) => {
    const [name, path] = entry.split('=');
    return { name: name!, path: path! };
  });

const documents = {
  text: proseText(10_000_000),
  html: `<html><body>${proseText(9_990_000)
    .split('\n\n')
    .map((p) => `<p>${p}</p>`)
    .join('\n')}</body></html>`,
};
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
    `node ${process.version}, ${ROUNDS} rounds, builds ${BUILDS.map((b) => b.name).join(' / ')}`,
);
const results: Array<Record<string, unknown>> = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const build of BUILDS) {
    const service = await startServiceProcess({
      entry: build.path,
      env: {
        DATA_DIR: tempDir('bench-ingest'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      },
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
    results.push({ build: build.name, round, phase: 'idle', ...idle });
    const base = await api('/api/knowledge-bases', { name: 'bench' });
    for (const type of Object.keys(documents)) {
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
      const latencies = await probe(service.url, ingested);
      results.push({
        build: build.name,
        round,
        phase: `ingest ${type}`,
        status: await ingested,
        ingestMs: performance.now() - started,
        ...stats(latencies),
      });
    }
    await service.stop('SIGTERM');
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const phase of ['idle', 'ingest text', 'ingest html']) {
  for (const build of BUILDS) {
    const rows = results.filter((r) => r.build === build.name && r.phase === phase);
    const pick = (key: string) => median(rows.map((r) => Number(r[key] ?? 0)));
    const idleP99 = median(
      results.filter((r) => r.build === build.name && r.phase === 'idle').map((r) => Number(r.p99)),
    );
    console.log(
      JSON.stringify({
        build: build.name,
        phase,
        healthzP50Ms: Number(pick('p50').toFixed(2)),
        healthzP99Ms: Number(pick('p99').toFixed(2)),
        healthzMaxMs: Number(pick('max').toFixed(1)),
        p99VsIdle: Number((pick('p99') / idleP99).toFixed(2)),
        ...(phase === 'idle' ? {} : { ingestMs: Math.round(pick('ingestMs')) }),
      }),
    );
  }
}

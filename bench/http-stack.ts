/**
 * The HTTP layer's cost on three routes of the running all-in-one (the built `dist`, embedded
 * engines): `POST /node/tools/call` to a connected desktop node, `POST /api/knowledge-bases/search`
 * over a small ingested base, and an SSE `POST /api/agent/invoke` against a scripted model. For
 * each route: the service process's CPU time per request (from /proc, user + system, with the system share) and the
 * client-side latency p50 / p99, CONCURRENCY requests in flight on keep-alive connections.
 *
 *   pnpm build && node --import tsx bench/http-stack.ts
 *
 * Compares builds of the service in one run (e.g. before and after a change of the HTTP layer):
 * BUILDS=`name=path/to/apps/all-in-one/dist/main.js,...` (default: this checkout's build), each
 * started fresh per round, rounds alternating between the builds, medians reported with the
 * ratio to the first build. A build may carry environment of its own after `?`, so one build
 * compares with itself under two settings:
 * `BUILDS='metrics-off=apps/all-in-one/dist/main.js?METRICS_ENABLED=false,metrics-on=apps/all-in-one/dist/main.js'`.
 * Env: REQUESTS (default 2000 per route and round; invoke uses a quarter), ROUNDS (default 3),
 * CONCURRENCY (default 8), ROUTES (comma-separated route names to run, default all),
 * INTERLEAVE=1 (start every build once and keep it, rounds alternating the builds' order, CPU
 * pooled over the rounds: outside load on a shared machine then falls on every build alike; a
 * second copy of the baseline build shows the noise floor).
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { resolveKeys, signAccessToken } from '../packages/auth/src/index.js';
import { NodeClient } from '../packages/node-client/src/index.js';
import {
  startScriptedModel,
  startServiceProcess,
  textReply,
} from '../packages/testing/src/index.js';
import { keyFiles, tempDir } from '../tests/helpers.js';

const REQUESTS = Number(process.env.REQUESTS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const BUILDS = (process.env.BUILDS ?? 'current=apps/all-in-one/dist/main.js')
  .split(',')
  .map((entry) => {
    const at = entry.indexOf('=');
    const [path, query] = entry.slice(at + 1).split('?');
    const env = Object.fromEntries(new URLSearchParams(query ?? ''));
    return { name: entry.slice(0, at), path: path!, env };
  });
const ONLY = process.env.ROUTES?.split(',').map((r) => r.trim());
const MODEL = 'bench-model';
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const keys = keyFiles();
const model = await startScriptedModel();
const pair = await resolveKeys({ publicKeyPem: keys.publicKey, privateKeyPem: keys.privateKey });
const token = (await signAccessToken(pair, 'bench')).accessToken;
const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const topics = ['invoices and payment terms', 'travel expenses', 'vacation policy', 'laptops'];

interface Route {
  readonly name: string;
  readonly requests: number;
  call(i: number): Promise<unknown>;
}

/** One build running: its process, a connected node, an ingested base, and the routes. */
async function startBuild(entry: string, buildEnv: Record<string, string>) {
  const service = await startServiceProcess({
    entry,
    env: {
      DATA_DIR: tempDir('bench-http-stack'),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      ...buildEnv,
    },
  });
  const port = service.port;
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  /** One request; resolves with the body once the response ended. */
  const send = (method: string, path: string, body?: unknown): Promise<string> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          agent,
          headers: {
            ...auth,
            ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            (res.statusCode ?? 500) < 300
              ? resolve(text)
              : reject(new Error(`${path}: ${res.statusCode} ${text}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  // A desktop node whose tool answers at once.
  const node = new NodeClient({
    url: `ws://127.0.0.1:${port}`,
    kind: 'desktop',
    userId: 'bench',
    nodeId: 'bench-pc',
    token,
    node: { maxConcurrentTasks: CONCURRENCY * 2 },
    tools: {
      echo: { description: 'Echoes', writes: false, handler: (args) => String(args.text) },
    },
  });
  await node.start();
  await new Promise((resolve) => setTimeout(resolve, 300));

  // A knowledge base with a few documents, ingested.
  const base = JSON.parse(await send('POST', '/api/knowledge-bases', { name: 'bench' })) as {
    id: string;
  };
  for (const [i, topic] of topics.entries()) {
    const content = Array.from(
      { length: 40 },
      (_, j) =>
        `Section ${j} about ${topic}: rules, examples and exceptions number ${i * 100 + j}.`,
    ).join('\n\n');
    await send('POST', `/api/knowledge-bases/${base.id}/documents`, { name: topic, content });
  }
  for (;;) {
    const list = JSON.parse(await send('GET', `/api/knowledge-bases/${base.id}/documents`)) as {
      documents: Array<{ status: string }>;
    };
    if (list.documents.every((d) => d.status === 'ready')) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const routes: Route[] = [
    {
      // The smallest authenticated request: the HTTP layer and the token check, nothing else.
      name: 'GET /api/auth/whoami',
      requests: REQUESTS,
      call: () => send('GET', '/api/auth/whoami'),
    },
    {
      name: 'POST /node/tools/call',
      requests: REQUESTS,
      call: (i) =>
        send('POST', '/node/tools/call', {
          node_type: 'desktop',
          tool_name: 'echo',
          arguments: { text: `hello ${i}` },
        }),
    },
    {
      name: 'POST /api/knowledge-bases/search',
      requests: REQUESTS,
      call: (i) =>
        send('POST', '/api/knowledge-bases/search', {
          query: topics[i % topics.length],
          knowledge_base_ids: [base.id],
        }),
    },
    {
      name: 'POST /api/agent/invoke (SSE)',
      requests: Math.max(1, Math.floor(REQUESTS / 4)),
      call: async () => {
        model.script(MODEL, [textReply('A short streamed answer of a few words.', 6)]);
        const stream = await send('POST', '/api/agent/invoke', {
          message: 'Hi',
          llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-bench', modelName: MODEL },
        });
        if (!stream.includes('"type":"done"')) throw new Error('the run did not finish');
      },
    },
  ];
  /** CPU seconds the service process used so far, user and system. */
  const cpuSeconds = (): CpuSeconds => {
    const stat = readFileSync(`/proc/${service.child.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      user: Number(fields[11]) / TICKS_PER_SECOND,
      system: Number(fields[12]) / TICKS_PER_SECOND,
    };
  };
  return {
    routes: ONLY ? routes.filter((r) => ONLY.includes(r.name)) : routes,
    cpuSeconds,
    async stop() {
      await node.close();
      agent.destroy();
      await service.stop('SIGTERM');
    },
  };
}

interface CpuSeconds {
  readonly user: number;
  readonly system: number;
}

async function measure(route: Route, cpuSeconds: () => CpuSeconds) {
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = cpuSeconds();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < route.requests) {
        const i = next++;
        const t0 = performance.now();
        await route.call(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const wallMs = performance.now() - started;
  const cpuAfter = cpuSeconds();
  const systemMs = (cpuAfter.system - cpuBefore.system) * 1000;
  const cpuMs = (cpuAfter.user - cpuBefore.user) * 1000 + systemMs;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return {
    cpuMs,
    systemMs,
    n: route.requests,
    cpuMsPerRequest: cpuMs / route.requests,
    p50: at(0.5),
    p99: at(0.99),
    perSecond: (route.requests / wallMs) * 1000,
  };
}

console.log(
  `# http-stack${process.env.INTERLEAVE === '1' ? ' (interleaved)' : ''}: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${REQUESTS} requests, ` +
    `builds ${BUILDS.map((b) => b.name).join(' / ')}`,
);
type Sample = Awaited<ReturnType<typeof measure>>;
const samples = new Map<string, Sample[]>();
const record = (build: string, route: string, sample: Sample) => {
  const key = `${build}\u0000${route}`;
  samples.set(key, [...(samples.get(key) ?? []), sample]);
};
if (process.env.INTERLEAVE === '1') {
  // Every build started once and kept running; each round measures every route on every build,
  // the builds' order reversed each round, so load from outside hits them alike.
  // One after the other: embedded databases starting together on a busy machine time out.
  const running: Array<Awaited<ReturnType<typeof startBuild>>> = [];
  for (const build of BUILDS) running.push(await startBuild(build.path, build.env));
  for (const build of running) {
    for (const route of build.routes) {
      await measure({ ...route, requests: Math.ceil(route.requests / 5) }, build.cpuSeconds);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = BUILDS.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const routeIndex of running[0]!.routes.keys()) {
      for (const i of order) {
        const route = running[i]!.routes[routeIndex]!;
        record(BUILDS[i]!.name, route.name, await measure(route, running[i]!.cpuSeconds));
      }
    }
  }
  for (const build of running) await build.stop();
} else {
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of BUILDS) {
      const running = await startBuild(build.path, build.env);
      for (const route of running.routes) {
        await measure({ ...route, requests: Math.ceil(route.requests / 10) }, running.cpuSeconds);
        record(build.name, route.name, await measure(route, running.cpuSeconds));
      }
      await running.stop();
    }
  }
}
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const summary = (key: string) => {
  const list = samples.get(key)!;
  return {
    // Pooled: all CPU over all requests (per-round CPU is counted in 10 ms ticks).
    cpuMsPerRequest: list.reduce((sum, s) => sum + s.cpuMs, 0) / list.reduce((n, s) => n + s.n, 0),
    systemShare:
      list.reduce((sum, s) => sum + s.systemMs, 0) / list.reduce((sum, s) => sum + s.cpuMs, 0),
    cpuMsPerRequestMedian: median(list.map((s) => s.cpuMsPerRequest)),
    p50Ms: median(list.map((s) => s.p50)),
    p99Ms: median(list.map((s) => s.p99)),
    perSecond: median(list.map((s) => s.perSecond)),
  };
};
const routeNames = [...new Set([...samples.keys()].map((key) => key.split('\u0000')[1]!))];
for (const route of routeNames) {
  const base = summary(`${BUILDS[0]!.name}\u0000${route}`);
  for (const build of BUILDS) {
    const s = summary(`${build.name}\u0000${route}`);
    console.log(
      JSON.stringify({
        build: build.name,
        route,
        cpuMsPerRequest: Number(s.cpuMsPerRequest.toFixed(4)),
        cpuMsPerRequestMedian: Number(s.cpuMsPerRequestMedian.toFixed(4)),
        systemShare: Number(s.systemShare.toFixed(2)),
        p50Ms: Number(s.p50Ms.toFixed(2)),
        p99Ms: Number(s.p99Ms.toFixed(2)),
        perSecond: Math.round(s.perSecond),
        cpuRatio: Number((s.cpuMsPerRequest / base.cpuMsPerRequest).toFixed(3)),
        p99Ratio: Number((s.p99Ms / base.p99Ms).toFixed(3)),
      }),
    );
  }
}
await model.close();

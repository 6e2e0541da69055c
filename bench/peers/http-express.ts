/**
 * What the service's HTTP stack costs over the framework floor: two routes of a real API process
 * against the same handler logic mounted on a bare Express 5 app, loaded by `autocannon` at fixed
 * concurrency, in the same run.
 *
 *   pnpm build && node --import tsx bench/peers/http-express.ts
 *
 * Routes: `GET /node/devices?user_id=…` (the node listing; the issue calls it `/api/nodes`) and
 * `POST /api/knowledge-bases/search`.
 * - `ours`: the built `apps/api/dist/main.js` on Redis + PostgreSQL engines (the split API role, as
 *   deployed; `LOG_LEVEL=warn`, metrics on, tracing off: the defaults).
 * - `bare Express` (baseline): this file with `BENCH_ROLE=express`, an Express 5 app with
 *   `express.json()` and the two handlers, calling what our handlers call: the cached token
 *   verifier (`createTokenVerifier`), the zod query/body schemas, `listNodeRecords` on the
 *   presence engine, `knowledgeSearcher` on the database, on engines built by `createEngines`
 *   from the same `api` configuration, so both read the same Redis keys and the same schema.
 *   No error registry, logging, metrics, tracing, request ids or body limits beyond Express's.
 * Data: one desktop node registered through a real gateway process (a `ws` node from
 * `bench/support/node-fleet.ts`), one knowledge base of four documents ingested by a real worker
 * process (stopped before the measurements). Both apps must answer the same JSON first.
 *
 * Per route, ROUNDS rounds alternate the two apps (order swapped each round): autocannon with
 * CONNECTIONS connections for DURATION_S seconds each, in this process. Reported: requests/s,
 * latency p50/p99, non-2xx and errors (all from autocannon), and the server process's CPU
 * (user + system from /proc) per request, pooled over the rounds.
 *
 * Env: CONNECTIONS (default 32), DURATION_S (default 10), ROUNDS (default 3), WARMUP_S (default
 * 3 per app and route), PROFILE_DIR (both servers run with `--cpu-prof` into it), REDIS_URL,
 * DATABASE_URL.
 */
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { createTokenVerifier, importKeys, signAccessToken } from '../../packages/auth/src/index.js';
import { loadConfig } from '../../packages/config/src/index.js';
import { createEngines } from '../../packages/engines/src/index.js';
import { knowledgeSearcher } from '../../packages/knowledge/src/index.js';
import { createLogger } from '../../packages/logger/src/index.js';
import { listNodeRecords } from '../../packages/node-rpc/src/index.js';
import {
  ListNodesQuery,
  SearchKnowledgeBasesRequest,
  type NodeInfo,
} from '../../packages/protocol/src/index.js';
import { createTestSchema, uniquePrefix } from '../../packages/testing/src/index.js';
import { startFleet } from '../support/node-fleet.js';
import { fmt } from '../support/open-loop.js';
import {
  cpuMs,
  machineLine,
  startEntry,
  stopChild,
  sleep,
  type Service,
} from '../support/processes.js';
import { redisServer, unlinkPrefix } from '../support/redis.js';
import { ensurePeers, requirePeer } from './peers.js';

const SELF = new URL(import.meta.url).pathname;
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const connections = Number(process.env.CONNECTIONS ?? 32);
const durationS = Number(process.env.DURATION_S ?? 10);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmUpS = Number(process.env.WARMUP_S ?? 3);
/** Set: both server processes run with `--cpu-prof` and write their profiles here at the end. */
const profileDir = process.env.PROFILE_DIR;
const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
const USER = 'bench-http';

// ---------------------------------------------------------------- the few peer members used

interface ExpressRequest {
  headers: Record<string, string | undefined>;
  query: unknown;
  body: unknown;
  userId?: string;
}
interface ExpressResponse {
  status(code: number): ExpressResponse;
  json(body: unknown): void;
}
type Handler = (req: ExpressRequest, res: ExpressResponse) => Promise<void> | void;
interface ExpressApp {
  use(handler: unknown): void;
  get(path: string, handler: Handler): void;
  post(path: string, handler: Handler): void;
  listen(port: number, host: string): void;
}
interface ExpressModule {
  (): ExpressApp;
  json(): unknown;
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  duration: number;
  errors: number;
  non2xx: number;
  '2xx': number;
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;

// ---------------------------------------------------------------- the bare Express app (child)

async function runExpress(): Promise<void> {
  const express = requirePeer<ExpressModule>('express');
  const config = loadConfig('api', process.env);
  const engines = await createEngines(config, createLogger({ level: 'warn' }));
  const keys = await importKeys({ publicKey: config.jwtPublicKeyPem! });
  const verify = createTokenVerifier(keys);
  const search = knowledgeSearcher(engines.db);
  const app = express();
  app.use(express.json());
  const fail = (res: ExpressResponse, status: number, message: string) =>
    res.status(status).json({ error: { message } });
  /** The bearer check our `requireUser` does, with the same cached verifier. */
  const authenticate = async (req: ExpressRequest, res: ExpressResponse) => {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return fail(res, 401, 'missing bearer token');
    try {
      req.userId = (await verify(token)).userId;
      return true;
    } catch (error) {
      return fail(res, 401, (error as Error).message);
    }
  };
  app.get('/healthz', (_req, res) => res.json({ ok: true }));
  app.get('/node/devices', async (req, res) => {
    if ((await authenticate(req, res)) !== true) return;
    const query = ListNodesQuery.safeParse(req.query);
    if (!query.success) return fail(res, 400, query.error.message);
    if (query.data.user_id !== req.userId) return fail(res, 403, 'forbidden');
    const nodes: NodeInfo[] = [];
    for (const { record } of await listNodeRecords(engines.presence, query.data.user_id)) {
      if (query.data.node_type && record.node_type !== query.data.node_type) continue;
      if (query.data.online_only && record.status !== 'online') continue;
      const { tools: _tools, ...node } = record;
      nodes.push(node);
    }
    res.json({ nodes, total: nodes.length });
  });
  app.post('/api/knowledge-bases/search', async (req, res) => {
    if ((await authenticate(req, res)) !== true) return;
    const body = SearchKnowledgeBasesRequest.safeParse(req.body);
    if (!body.success) return fail(res, 400, body.error.message);
    const results = await search({
      userId: req.userId!,
      knowledgeBaseIds: [...new Set(body.data.knowledge_base_ids)],
      query: body.data.query,
      limit: body.data.limit,
    });
    res.json({ results });
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
  // Exits normally on SIGTERM, so that `--cpu-prof` (PROFILE_DIR) writes its profile.
  process.once('SIGTERM', () => process.exit(0));
}

// ---------------------------------------------------------------- main

interface Route {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
}

async function main(): Promise<void> {
  const versions = ensurePeers(['express', 'autocannon']);
  const autocannon = requirePeer<Autocannon>('autocannon');
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: ChildProcess[] = [];
  process.once('SIGINT', () => {
    for (const child of children) child.kill('SIGKILL');
    process.exit(130);
  });
  try {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const keys = await importKeys(pair);
    const token = (await signAccessToken(keys, USER)).accessToken;
    const prefix = uniquePrefix('bench-http');
    const schema = await createTestSchema('bench_http');
    cleanups.push(() => schema.drop());
    cleanups.push(() => unlinkPrefix(redisUrl, prefix));
    const env = {
      JWT_PUBLIC_KEY: pair.publicKey,
      JWT_PRIVATE_KEY: pair.privateKey,
      LOG_LEVEL: 'warn',
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: prefix,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema.schema,
    };
    const start = async (
      name: string,
      entry: string,
      options: { execArgv?: string[]; role?: string } = {},
    ): Promise<Service> => {
      const service = await startEntry(
        entry,
        {
          ...env,
          INSTANCE_ID: `bench-${name}`,
          ...(options.role ? { BENCH_ROLE: options.role } : {}),
        },
        options,
      );
      children.push(service.child);
      cleanups.push(() => service.stop());
      return service;
    };
    const api = await start('api', 'apps/api/dist/main.js', { execArgv: profile }); // migrates the schema
    const gateway = await start('gateway', 'apps/gateway/dist/main.js');
    const worker = await start('worker', 'apps/worker/dist/main.js');
    const bare = await start('express', SELF, {
      execArgv: [...profile, '--import', 'tsx'],
      role: 'express',
    });
    const fleet = await startFleet([
      { base: gateway.url.replace('http', 'ws'), userId: USER, token },
    ]);
    children.push(fleet);
    cleanups.push(() => stopChild(fleet));

    const send = async (url: string, method: string, body?: unknown) => {
      const response = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status}`);
      return (await response.json()) as unknown;
    };
    const topics = ['invoices and payment terms', 'travel expenses', 'vacation policy', 'laptops'];
    const base = (await send(`${api.url}/api/knowledge-bases`, 'POST', { name: 'bench' })) as {
      id: string;
    };
    for (const [i, topic] of topics.entries()) {
      const content = Array.from(
        { length: 40 },
        (_, j) =>
          `Section ${j} about ${topic}: rules, examples and exceptions number ${i * 100 + j}.`,
      ).join('\n\n');
      await send(`${api.url}/api/knowledge-bases/${base.id}/documents`, 'POST', {
        name: topic,
        content,
      });
    }
    for (let ready = false; !ready; await sleep(200)) {
      const list = (await send(`${api.url}/api/knowledge-bases/${base.id}/documents`, 'GET')) as {
        documents: Array<{ status: string }>;
      };
      ready = list.documents.every((d) => d.status === 'ready');
    }
    await worker.stop();

    const routes: Route[] = [
      { name: 'GET /node/devices', method: 'GET', path: `/node/devices?user_id=${USER}` },
      {
        name: 'POST /api/knowledge-bases/search',
        method: 'POST',
        path: '/api/knowledge-bases/search',
        body: JSON.stringify({ query: 'travel expenses', knowledge_base_ids: [base.id] }),
      },
    ];
    const apps = [
      { name: 'bare Express', service: bare },
      { name: 'ours', service: api },
    ];
    for (const route of routes) {
      const answers = await Promise.all(
        apps.map(({ service }) =>
          send(`${service.url}${route.path}`, route.method, route.body && JSON.parse(route.body)),
        ),
      );
      const [a, b] = answers.map((answer) => JSON.stringify(answer));
      if (a !== b) throw new Error(`${route.name}: the apps answer differently:\n${a}\n${b}`);
      if (a!.length < 40) throw new Error(`${route.name}: answer too small: ${a}`);
    }

    const load = (service: Service, route: Route, seconds: number) =>
      autocannon({
        url: `${service.url}${route.path}`,
        method: route.method,
        connections,
        duration: seconds,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(route.body ? { body: route.body } : {}),
      });
    const redis = await redisServer(redisUrl);
    console.log(`machine: ${machineLine()}`);
    console.log(
      `versions: ${versions.join(', ')}; Redis ${redis.version}; PostgreSQL at ${new URL(databaseUrl).host}`,
    );
    console.log(
      `autocannon in the benchmark process, ${connections} connections, ${durationS} s per app and round, ${rounds} rounds alternating (order swapped each round), ${warmUpS} s warm-up per app and route; LOG_LEVEL=warn\n`,
    );
    console.log(
      '| route | app | requests | requests/s (mean of rounds) | p50 (ms) | p99 (ms) | non-2xx | errors | CPU per request (ms, server process) | ours ÷ bare Express: requests/s / CPU per request |',
    );
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const route of routes) {
      for (const { service } of apps) await load(service, route, warmUpS);
      const pooled = apps.map(() => ({
        requests: 0,
        seconds: 0,
        cpuMs: 0,
        p50: [] as number[],
        p99: [] as number[],
        non2xx: 0,
        errors: 0,
      }));
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? [0, 1] : [1, 0];
        for (const k of order) {
          const { service } = apps[k]!;
          const before = cpuMs(service.child.pid!) ?? 0;
          const result = await load(service, route, durationS);
          const after = cpuMs(service.child.pid!) ?? 0;
          const p = pooled[k]!;
          p.requests += result['2xx'] + result.non2xx;
          p.seconds += result.duration;
          p.cpuMs += after - before;
          p.p50.push(result.latency.p50);
          p.p99.push(result.latency.p99);
          p.non2xx += result.non2xx;
          p.errors += result.errors;
        }
      }
      const median = (values: number[]) =>
        [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
      const stats = pooled.map((p) => ({
        perSecond: p.requests / p.seconds,
        cpu: p.cpuMs / Math.max(1, p.requests),
      }));
      apps.forEach(({ name }, k) => {
        const p = pooled[k]!;
        const s = stats[k]!;
        const ratio =
          k === 0
            ? 'baseline'
            : `${(s.perSecond / stats[0]!.perSecond).toFixed(2)}× / ${(s.cpu / stats[0]!.cpu).toFixed(2)}×`;
        console.log(
          `| ${route.name} | ${name} | ${p.requests} | ${fmt(s.perSecond)} | ${fmt(median(p.p50))} | ${fmt(median(p.p99))} | ${p.non2xx} | ${p.errors} | ${s.cpu.toFixed(3)} | ${ratio} |`,
        );
      });
    }
    console.log('\n(p50 and p99: median over the rounds of autocannon’s per-round figures)');
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

if (process.env.BENCH_ROLE === 'express') await runExpress();
else {
  await main();
  process.exit(0);
}

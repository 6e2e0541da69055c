/**
 * Tool-call round trip through the gateway under a steady open-loop load, distributed vs in-process,
 * measured in the same run so the ratio means something on whatever machine runs it.
 *
 *   pnpm build && node --import tsx bench/gateway-tool-call.ts
 *
 * Variants (each a `tools/call` to a node that answers at once with `ok <i>`):
 * - `in-process`: the caller (`createNodeToolCaller`), the in-process bus and presence and the
 *   gateway (`mountGateway` on its own HTTP server) all live in this process, wired exactly as
 *   the all-in-one wires them. This is the baseline of `distributed`.
 * - `distributed`: the same caller on Redis engines built by `createEngines` with an `api` config
 *   (what an API replica runs), talking to a real gateway process (`apps/gateway/dist/main.js`).
 * - `HTTP all-in-one`: `POST /node/tools/call` to a real all-in-one process (baseline of the next).
 * - `HTTP split`: `POST /node/tools/call` to a real API process, which reaches the gateway process
 *   through Redis.
 * The nodes are WebSocket clients in a separate "fleet" process (`support/node-fleet.ts`), one
 * per user and gateway, so in every variant the node side costs the same and sits outside the
 * measured process. Calls are scheduled by the clock (open loop) and latency is taken from the
 * scheduled time, so queueing in the load generator counts too.
 *
 * The in-process pieces run from their TypeScript sources (tsx strips the types); the child
 * processes run the same code as built by tsc.
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), RATE (calls/s, default 1000), DURATION_S (measured
 * seconds per caller variant, default 20), HTTP_DURATION_S (default 10), ROUNDS (default 10;
 * variants rotate each round and samples are pooled, so drift on a shared machine hits them
 * alike; the per-round p50 ratio pairs each variant with its baseline a few seconds apart),
 * WARMUP_S (default 2 per variant), NODES (users with one node each, default 10), HTTP (0 skips
 * the HTTP variants), HTTP_RATE (calls/s of the HTTP variants, default 250: one Node process
 * serving `POST /node/tools/call` used about 2 ms of CPU per call here, so 1,000/s would measure
 * a saturated queue; see docs/BENCHMARKS.md).
 */
import { type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { type AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountGateway } from '@agent-backend/gateway';
import {
  importKeys,
  RevocationList,
  signAccessToken,
  verifyAccessToken,
} from '../packages/auth/src/index.js';
import { loadConfig } from '../packages/config/src/index.js';
import { createEngines, type Engines } from '../packages/engines/src/index.js';
import { bearerAuth, createHttpServer } from '../packages/http-server/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { NO_METRICS } from '../packages/metrics/src/index.js';
import { createNodeToolCaller } from '../packages/node-rpc/src/index.js';
import { requestLimits, ServiceAudit, type ServiceContext } from '../packages/runtime/src/index.js';
import { createTestSchema, uniquePrefix, type TestSchema } from '../packages/testing/src/index.js';
import { startFleet, type FleetTarget } from './support/node-fleet.js';
import { startEntry, stopChild, type Service } from './support/processes.js';
import { redisServer, unlinkPrefix } from './support/redis.js';
import { freshPool, printVariants, runRounds, type Variant } from './support/variants.js';

const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const rate = Number(process.env.RATE ?? 1_000);
const httpRate = Number(process.env.HTTP_RATE ?? 250);
const durationS = Number(process.env.DURATION_S ?? 20);
const rounds = Number(process.env.ROUNDS ?? 10);
const httpDurationS = Number(process.env.HTTP_DURATION_S ?? 10);
const warmUpS = Number(process.env.WARMUP_S ?? 2);
const nodeCount = Number(process.env.NODES ?? 10);
const withHttp = process.env.HTTP !== '0';
const CALL_TIMEOUT_MS = 10_000;

/** A lean keep-alive HTTP client (global `fetch` costs the load generator about 1 ms CPU per call). */
const agent = new Agent({ keepAlive: true, maxSockets: 1_024 });
function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: unknown }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            });
          } catch (error) {
            reject(error as Error);
          }
        });
      },
    );
    req.on('error', reject);
    req.setTimeout(CALL_TIMEOUT_MS + 5_000, () =>
      req.destroy(Object.assign(new Error('client timeout'), { code: 'client_timeout' })),
    );
    req.end(payload);
  });
}

// ---------------------------------------------------------------- main

/** The gateway role mounted in this process on in-process engines, as the all-in-one mounts it. */
async function startInProcess(
  env: Record<string, string>,
): Promise<{ context: ServiceContext; url: string; close(): Promise<void> }> {
  const config = loadConfig('all-in-one', env);
  const logger = createLogger({ level: config.LOG_LEVEL, base: { role: 'bench-in-process' } });
  const engines = await createEngines(config, logger, { databaseReadiness: false });
  const keys = await importKeys({
    publicKey: config.jwtPublicKeyPem!,
    privateKey: config.jwtPrivateKeyPem,
  });
  const app = createHttpServer({ logger });
  const verifyToken = (token: string) => verifyAccessToken(keys, token);
  const requireUser = bearerAuth(verifyToken);
  const context: ServiceContext = {
    config,
    logger,
    engines,
    keys,
    app,
    requireUser,
    verifyToken,
    // Never started: the bench revokes nobody.
    revocations: new RevocationList(engines.db),
    metrics: NO_METRICS,
    limits: requestLimits(engines.limits, config, NO_METRICS, logger),
    audit: new ServiceAudit(engines.db, logger),
  };
  const role = await mountGateway(context);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    context,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await Promise.all([app.close(), role.close()]);
      await engines.close();
    },
  };
}

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: ChildProcess[] = [];
  const watchdog = setTimeout(() => {
    console.error('gateway-tool-call: over its time budget (170 s); killing children');
    for (const child of children) child.kill('SIGKILL');
    process.exit(1);
  }, 170_000);
  watchdog.unref();
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
    const prefix = uniquePrefix('bench-gw');
    const schemas: TestSchema[] = [
      await createTestSchema('bench_gw'),
      await createTestSchema('bench_aio'),
    ];
    cleanups.push(() => Promise.all(schemas.map((s) => s.drop())));
    cleanups.push(() => unlinkPrefix(redisUrl, prefix));
    const common = {
      JWT_PUBLIC_KEY: pair.publicKey,
      JWT_PRIVATE_KEY: pair.privateKey,
      LOG_LEVEL: 'warn',
    };
    const distributedEnv = {
      ...common,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: prefix,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schemas[0]!.schema,
    };

    const users = Array.from({ length: nodeCount }, (_, i) => `bench-u${i}`);
    const tokens = new Map<string, string>();
    for (const user of users) tokens.set(user, (await signAccessToken(keys, user)).accessToken);

    const gateway = await startEntry('apps/gateway/dist/main.js', {
      ...distributedEnv,
      INSTANCE_ID: 'bench-gateway',
    });
    children.push(gateway.child);
    cleanups.push(() => gateway.stop());
    const inProcess = await startInProcess({
      ...common,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schemas[0]!.schema,
      INSTANCE_ID: 'bench-in-process',
      DATA_DIR: tmpdir(),
    });
    cleanups.push(() => inProcess.close());
    const callerConfig = loadConfig('api', { ...distributedEnv, INSTANCE_ID: 'bench-caller' });
    const callerEngines: Engines = await createEngines(
      callerConfig,
      createLogger({ level: 'warn' }),
    );
    cleanups.push(() => callerEngines.close());
    const bases = [gateway.url, inProcess.url];
    let api: Service | undefined;
    let allInOne: Service | undefined;
    if (withHttp) {
      api = await startEntry('apps/api/dist/main.js', {
        ...distributedEnv,
        INSTANCE_ID: 'bench-api',
      });
      children.push(api.child);
      cleanups.push(() => api!.stop());
      const dataDir = mkdtempSync(join(tmpdir(), 'bench-aio-'));
      cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
      allInOne = await startEntry('apps/all-in-one/dist/main.js', {
        ...common,
        DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        DATABASE_SCHEMA: schemas[1]!.schema,
      });
      children.push(allInOne.child);
      cleanups.push(() => allInOne!.stop());
      bases.push(allInOne.url);
    }

    const targets: FleetTarget[] = bases.flatMap((base) =>
      users.map((userId) => ({
        base: base.replace('http', 'ws'),
        userId,
        token: tokens.get(userId)!,
      })),
    );
    const fleet = await startFleet(targets);
    children.push(fleet);
    cleanups.push(() => stopChild(fleet));

    const { version: redisVersion, pid: redisPid } = await redisServer(redisUrl);

    const check = (i: number, result: { success: boolean; text: string }) => {
      if (!result.success || result.text !== `ok ${i}`)
        throw new Error(`wrong result for call ${i}: ${JSON.stringify(result)}`);
    };
    const callerCall = (caller: ReturnType<typeof createNodeToolCaller>) => async (i: number) =>
      check(
        i,
        await caller.callTool({
          userId: users[i % users.length]!,
          nodeType: 'desktop',
          toolName: 'echo',
          arguments: { i },
          timeoutMs: CALL_TIMEOUT_MS,
        }),
      );
    const httpCall = (base: string) => async (i: number) => {
      const user = users[i % users.length]!;
      const res = await postJson(
        `${base}/node/tools/call`,
        { node_type: 'desktop', tool_name: 'echo', arguments: { i }, timeout_ms: CALL_TIMEOUT_MS },
        { authorization: `Bearer ${tokens.get(user)}` },
      );
      const body = res.body as { success: boolean; text: string; error?: { code?: string } };
      if (res.status !== 200)
        throw Object.assign(new Error(`HTTP ${res.status}`), {
          code: `HTTP ${res.status} ${body.error?.code ?? ''}`,
        });
      check(i, body);
    };
    const fresh = freshPool;
    const redisRole: Record<string, number> = redisPid !== undefined ? { redis: redisPid } : {};
    const variants: Variant[] = [
      {
        name: 'in-process',
        path: 'caller → in-process bus → gateway → node (one process)',
        rate,
        seconds: durationS,
        roundP50s: [],
        call: callerCall(
          createNodeToolCaller({
            bus: inProcess.context.engines.bus,
            presence: inProcess.context.engines.presence,
            defaultTimeoutMs: CALL_TIMEOUT_MS,
          }),
        ),
        pids: { 'bench (caller + gateway)': process.pid, fleet: fleet.pid! },
        pooled: fresh(),
      },
      {
        name: 'distributed',
        path: 'caller → Redis → gateway process → node',
        rate,
        seconds: durationS,
        roundP50s: [],
        baseline: 'in-process',
        call: callerCall(
          createNodeToolCaller({
            bus: callerEngines.bus,
            presence: callerEngines.presence,
            defaultTimeoutMs: CALL_TIMEOUT_MS,
          }),
        ),
        pids: {
          'bench (caller)': process.pid,
          gateway: gateway.child.pid!,
          fleet: fleet.pid!,
          ...redisRole,
        },
        pooled: fresh(),
      },
    ];
    if (api && allInOne) {
      variants.push(
        {
          name: 'HTTP all-in-one',
          path: 'HTTP → all-in-one process (in-process bus) → node',
          rate: httpRate,
          seconds: httpDurationS,
          roundP50s: [],
          call: httpCall(allInOne.url),
          pids: {
            'bench (HTTP client)': process.pid,
            'all-in-one': allInOne.child.pid!,
            fleet: fleet.pid!,
          },
          pooled: fresh(),
        },
        {
          name: 'HTTP split',
          path: 'HTTP → API process → Redis → gateway process → node',
          rate: httpRate,
          seconds: httpDurationS,
          roundP50s: [],
          baseline: 'HTTP all-in-one',
          call: httpCall(api.url),
          pids: {
            'bench (HTTP client)': process.pid,
            api: api.child.pid!,
            gateway: gateway.child.pid!,
            fleet: fleet.pid!,
            ...redisRole,
          },
          pooled: fresh(),
        },
      );
    }

    const loads = await runRounds(variants, rounds, warmUpS);

    console.log(
      `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Redis ${redisVersion} at ${new URL(redisUrl).host}`,
    );
    console.log(
      `load average (1 min) during the run: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
    );
    console.log(
      `open loop; ${durationS} s per caller variant and ${httpDurationS} s per HTTP variant, in ${rounds} rotating rounds, after ${warmUpS} s warm-up each; ${nodeCount} users × 1 desktop node; LOG_LEVEL=warn\n`,
    );
    printVariants(variants);
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
    clearTimeout(watchdog);
  }
}

await main();
process.exit(0);

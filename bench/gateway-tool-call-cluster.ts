/**
 * Tool-call round trip through a gateway process on a Redis Cluster vs on one standalone Redis,
 * measured in the same run (rotating rounds, pooled samples) so the ratio means something on a
 * shared machine.
 *
 *   pnpm build && npx tsx bench/gateway-tool-call-cluster.ts
 *
 * Variants (each a `tools/call` to a node that answers at once with `ok <i>`, issued by
 * `createNodeToolCaller` on the Redis engines an API replica builds, in this process):
 * - `standalone` (baseline): engines and a gateway process (`apps/gateway/dist/main.js`) on the
 *   Redis of `REDIS_URL`.
 * - `cluster`: the same on a local Redis Cluster started here (six `redis-server` processes on
 *   loopback, three masters with a replica each, as the tests start it), `REDIS_MODE=cluster`:
 *   presence keys hash-tagged, the bus on sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`).
 * The nodes are WebSocket clients in a separate fleet process (`support/node-fleet.ts`). CPU per
 * call sums this process, the gateway, the fleet and Redis: the one server, or all six Cluster
 * processes (replicas included: they receive the writes).
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), RATE (calls/s, default 500), DURATION_S (measured
 * seconds per variant, default 20), ROUNDS (default 10), WARMUP_S (default 2), NODES (users with
 * one node each, default 10).
 */
import { type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { cpus } from 'node:os';
import { importKeys, signAccessToken } from '../packages/auth/src/index.js';
import { loadConfig } from '../packages/config/src/index.js';
import { createEngines } from '../packages/engines/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { createNodeToolCaller } from '../packages/node-rpc/src/index.js';
import {
  createTestSchema,
  startTestRedisCluster,
  uniquePrefix,
} from '../packages/testing/src/index.js';
import { startFleet } from './support/node-fleet.js';
import { startEntry, stopChild } from './support/processes.js';
import { redisServer, unlinkPrefix } from './support/redis.js';
import { freshPool, printVariants, runRounds, type Variant } from './support/variants.js';

const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const rate = Number(process.env.RATE ?? 500);
const durationS = Number(process.env.DURATION_S ?? 20);
const rounds = Number(process.env.ROUNDS ?? 10);
const warmUpS = Number(process.env.WARMUP_S ?? 2);
const nodeCount = Number(process.env.NODES ?? 10);
const CALL_TIMEOUT_MS = 10_000;

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: ChildProcess[] = [];
  const watchdog = setTimeout(
    () => {
      console.error('gateway-tool-call-cluster: over its time budget; killing children');
      for (const child of children) child.kill('SIGKILL');
      process.exit(1);
    },
    (durationS * 2 + warmUpS * 2 + 120) * 1_000,
  );
  watchdog.unref();
  try {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const keys = await importKeys(pair);
    const prefix = uniquePrefix('bench-gwc');
    const schema = await createTestSchema('bench_gwc');
    cleanups.push(() => schema.drop());
    cleanups.push(() => unlinkPrefix(redisUrl, prefix));
    const cluster = await startTestRedisCluster();
    cleanups.push(() => cluster.stop());
    const common = {
      JWT_PUBLIC_KEY: pair.publicKey,
      JWT_PRIVATE_KEY: pair.privateKey,
      LOG_LEVEL: 'warn',
      REDIS_KEY_PREFIX: prefix,
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema.schema,
    };
    const envs = {
      standalone: { ...common, REDIS_URL: redisUrl },
      cluster: { ...common, REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: cluster.nodes.join(',') },
    };
    const users = Array.from({ length: nodeCount }, (_, i) => `bench-u${i}`);
    const tokens = new Map<string, string>();
    for (const user of users) tokens.set(user, (await signAccessToken(keys, user)).accessToken);

    const redisPids = {
      standalone: [(await redisServer(redisUrl)).pid].filter((pid) => pid !== undefined),
      cluster: await Promise.all(
        cluster.nodes.map(async (node) => (await redisServer(`redis://${node}`)).pid!),
      ),
    };
    const variants: Variant[] = [];
    const gateways: string[] = [];
    for (const mode of ['standalone', 'cluster'] as const) {
      const gateway = await startEntry('apps/gateway/dist/main.js', {
        ...envs[mode],
        INSTANCE_ID: `bench-gateway-${mode}`,
      });
      children.push(gateway.child);
      cleanups.push(() => gateway.stop());
      gateways.push(gateway.url);
      const engines = await createEngines(
        loadConfig('api', { ...envs[mode], INSTANCE_ID: `bench-caller-${mode}` }),
        createLogger({ level: 'warn' }),
      );
      cleanups.push(() => engines.close());
      const caller = createNodeToolCaller({
        bus: engines.bus,
        presence: engines.presence,
        defaultTimeoutMs: CALL_TIMEOUT_MS,
      });
      variants.push({
        name: mode,
        path: `caller → Redis ${mode} → gateway process → node`,
        ...(mode === 'cluster' ? { baseline: 'standalone' } : {}),
        rate,
        seconds: durationS,
        roundP50s: [],
        async call(i) {
          const result = await caller.callTool({
            userId: users[i % users.length]!,
            nodeType: 'desktop',
            toolName: 'echo',
            arguments: { i },
            timeoutMs: CALL_TIMEOUT_MS,
          });
          if (!result.success || result.text !== `ok ${i}`)
            throw new Error(`wrong result for call ${i}: ${JSON.stringify(result)}`);
        },
        pids: {
          'bench (caller)': process.pid,
          gateway: gateway.child.pid!,
          redis: redisPids[mode],
        },
        pooled: freshPool(),
      });
    }
    const fleet = await startFleet(
      gateways.flatMap((base) =>
        users.map((userId) => ({
          base: base.replace('http', 'ws'),
          userId,
          token: tokens.get(userId)!,
        })),
      ),
    );
    children.push(fleet);
    cleanups.push(() => stopChild(fleet));
    for (const variant of variants) Object.assign(variant.pids, { fleet: fleet.pid! });

    const loads = await runRounds(variants, rounds, warmUpS);
    const { version } = await redisServer(redisUrl);
    console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}`);
    console.log(
      `Redis ${version}: standalone at ${new URL(redisUrl).host}; Cluster of 6 local processes (3 masters + 3 replicas)`,
    );
    console.log(
      `load average (1 min) during the run: ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
    );
    console.log(
      `open loop; ${durationS} s per variant in ${rounds} rotating rounds, after ${warmUpS} s warm-up each; ${nodeCount} users × 1 desktop node per gateway; LOG_LEVEL=warn\n`,
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

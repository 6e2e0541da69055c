/**
 * The service's split tool-call path as an API replica runs it: a real gateway process
 * (`apps/gateway/dist/main.js`) on Redis engines, and in this process the caller
 * (`createNodeToolCaller`) on the engines `createEngines` builds from an `api` config. Path of a
 * call: caller → Redis pub/sub → gateway process → WebSocket → node → back. `caller` finds the
 * node's replica in its route cache (presence read once a second per user, and after a change);
 * `uncachedCaller` reads presence (one Lua script) on every call, as callers did before the route cache.
 */
import { generateKeyPairSync } from 'node:crypto';
import { importKeys, signAccessToken } from '../../packages/auth/src/index.js';
import { loadConfig } from '../../packages/config/src/index.js';
import { applyMigrations, createEngines } from '../../packages/engines/src/index.js';
import { createLogger } from '../../packages/logger/src/index.js';
import { createNodeToolCaller, type NodeToolCaller } from '../../packages/node-rpc/src/index.js';
import { createTestSchema, uniquePrefix } from '../../packages/testing/src/index.js';
import type { FleetTarget } from './node-fleet.js';
import { startEntry, type Service } from './processes.js';
import { unlinkPrefix } from './redis.js';

export interface SplitGateway {
  /** The first gateway process. */
  readonly gateway: Service;
  readonly gateways: Service[];
  readonly caller: NodeToolCaller;
  readonly uncachedCaller: NodeToolCaller;
  /**
   * Fleet targets for these users, one desktop node each, with fresh access tokens; users are
   * spread over the gateways in turn.
   */
  targets(users: string[]): Promise<FleetTarget[]>;
  /** Stops the gateway and the caller's engines, drops the schema and the Redis keys. */
  close(): Promise<void>;
}

export async function startSplitGateway(options: {
  redisUrl: string;
  databaseUrl: string;
  /** Deadline of a call unless the call sets its own. */
  defaultTimeoutMs: number;
  /** Gateway processes. @default 1 */
  gateways?: number;
}): Promise<SplitGateway> {
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const keys = await importKeys(pair);
  const prefix = uniquePrefix('bench-split');
  // The split roles require a database; the gateway reads its token cutoffs from it.
  const schema = await createTestSchema('bench_split');
  const env = {
    JWT_PUBLIC_KEY: pair.publicKey,
    JWT_PRIVATE_KEY: pair.privateKey,
    LOG_LEVEL: 'warn',
    REDIS_URL: options.redisUrl,
    REDIS_KEY_PREFIX: prefix,
    DATABASE_URL: options.databaseUrl,
    DATABASE_SCHEMA: schema.schema,
    // A node answers up to rate / NODES calls a second, over the per-connection frame limit
    // (50 a second by default): its answers would be dropped and the calls time out.
    GATEWAY_FRAMES_PER_SECOND: '0',
    // Profiling the gateway processes, e.g. GATEWAY_NODE_OPTIONS='--cpu-prof --cpu-prof-dir=/tmp/p'.
    ...(process.env.GATEWAY_NODE_OPTIONS ? { NODE_OPTIONS: process.env.GATEWAY_NODE_OPTIONS } : {}),
  };
  await applyMigrations(loadConfig('api', env), createLogger({ level: 'warn' }));
  const gateways = await Promise.all(
    Array.from({ length: options.gateways ?? 1 }, (_, i) =>
      startEntry('apps/gateway/dist/main.js', { ...env, INSTANCE_ID: `bench-gateway-${i}` }),
    ),
  );
  const engines = await createEngines(
    loadConfig('api', { ...env, INSTANCE_ID: 'bench-caller' }),
    createLogger({ level: 'warn' }),
  );
  const callerOptions = {
    bus: engines.bus,
    presence: engines.presence,
    defaultTimeoutMs: options.defaultTimeoutMs,
  };
  const caller = createNodeToolCaller(callerOptions);
  const uncachedCaller = createNodeToolCaller({ ...callerOptions, routeMaxAgeMs: 0 });
  const bases = gateways.map((gateway) => gateway.url.replace('http', 'ws'));
  return {
    gateway: gateways[0]!,
    gateways,
    caller,
    uncachedCaller,
    targets: (users) =>
      Promise.all(
        users.map(async (userId, i) => ({
          base: bases[i % bases.length]!,
          userId,
          token: (await signAccessToken(keys, userId)).accessToken,
        })),
      ),
    async close() {
      await caller.close();
      await engines.close();
      await Promise.all(gateways.map((gateway) => gateway.stop()));
      await schema.drop();
      await unlinkPrefix(options.redisUrl, prefix);
    },
  };
}

/**
 * The service's split tool-call path as an API replica runs it: a real gateway process
 * (`apps/gateway/dist/main.js`) on Redis engines, and in this process the caller
 * (`createNodeToolCaller`) on the engines `createEngines` builds from an `api` config. Path of a
 * call: caller → Redis pub/sub → gateway process → WebSocket → node → back. Each call also reads
 * presence (one Lua script) to find the node's replica.
 */
import { generateKeyPairSync } from 'node:crypto';
import { importKeys, signAccessToken } from '../../packages/auth/src/index.js';
import { loadConfig } from '../../packages/config/src/index.js';
import { createEngines } from '../../packages/engines/src/index.js';
import { createLogger } from '../../packages/logger/src/index.js';
import { createNodeToolCaller, type NodeToolCaller } from '../../packages/node-rpc/src/index.js';
import { createTestSchema, uniquePrefix } from '../../packages/testing/src/index.js';
import type { FleetTarget } from './node-fleet.js';
import { startEntry, type Service } from './processes.js';
import { unlinkPrefix } from './redis.js';

export interface SplitGateway {
  readonly gateway: Service;
  readonly caller: NodeToolCaller;
  /** Fleet targets for these users, one desktop node each, with fresh access tokens. */
  targets(users: string[]): Promise<FleetTarget[]>;
  /** Stops the gateway and the caller's engines, drops the schema and the Redis keys. */
  close(): Promise<void>;
}

export async function startSplitGateway(options: {
  redisUrl: string;
  databaseUrl: string;
  /** Deadline of a call unless the call sets its own. */
  defaultTimeoutMs: number;
}): Promise<SplitGateway> {
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const keys = await importKeys(pair);
  const prefix = uniquePrefix('bench-split');
  // The split roles require a database; the gateway never queries it.
  const schema = await createTestSchema('bench_split');
  const env = {
    JWT_PUBLIC_KEY: pair.publicKey,
    JWT_PRIVATE_KEY: pair.privateKey,
    LOG_LEVEL: 'warn',
    REDIS_URL: options.redisUrl,
    REDIS_KEY_PREFIX: prefix,
    DATABASE_URL: options.databaseUrl,
    DATABASE_SCHEMA: schema.schema,
  };
  const gateway = await startEntry('apps/gateway/dist/main.js', {
    ...env,
    INSTANCE_ID: 'bench-gateway',
  });
  const engines = await createEngines(
    loadConfig('api', { ...env, INSTANCE_ID: 'bench-caller' }),
    createLogger({ level: 'warn' }),
  );
  const caller = createNodeToolCaller({
    bus: engines.bus,
    presence: engines.presence,
    defaultTimeoutMs: options.defaultTimeoutMs,
  });
  const base = gateway.url.replace('http', 'ws');
  return {
    gateway,
    caller,
    targets: (users) =>
      Promise.all(
        users.map(async (userId) => ({
          base,
          userId,
          token: (await signAccessToken(keys, userId)).accessToken,
        })),
      ),
    async close() {
      await engines.close();
      await gateway.stop();
      await schema.drop();
      await unlinkPrefix(options.redisUrl, prefix);
    },
  };
}

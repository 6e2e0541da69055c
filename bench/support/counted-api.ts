/**
 * An API process of this build whose Redis traffic is counted: its own PostgreSQL schema and
 * Redis key prefix, and Redis reached through a counting proxy (redis-counter.ts). What the
 * limits bench and the round-trip test of the limits start, one per setting.
 */
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
} from '../../packages/testing/src/index.js';
import { startRedisCounter, type RedisCounter } from './redis-counter.js';
import { unlinkPrefix } from './redis.js';

export interface CountedApi {
  readonly service: ServiceProcess;
  readonly counter: RedisCounter;
  /** The Redis key prefix of the process's keys. */
  readonly prefix: string;
  /** Stops the process and the proxy, drops the schema and deletes the prefix's keys. */
  stop(): Promise<void>;
}

/**
 * Starts `apps/api/dist/main.js` named `name` (its instance id, and the label of its schema and
 * prefix) with the test Redis and PostgreSQL, `keys` as its JWT key files, loopback models
 * allowed, and `env` over that.
 */
export async function startCountedApi(
  name: string,
  keys: { readonly publicKeyFile: string; readonly privateKeyFile: string },
  env: Readonly<Record<string, string>>,
): Promise<CountedApi> {
  const redisUrl = testRedisUrl();
  const schema = await createTestSchema(name);
  const prefix = uniquePrefix(name);
  const counter = await startRedisCounter(new URL(redisUrl));
  const service = await startServiceProcess({
    entry: 'apps/api/dist/main.js',
    env: {
      REDIS_URL: counter.url,
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: prefix,
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      INSTANCE_ID: name,
      ...env,
    },
  });
  return {
    service,
    counter,
    prefix,
    async stop() {
      await service.stop('SIGTERM');
      await counter.close();
      await schema.drop();
      await unlinkPrefix(redisUrl, prefix);
    },
  };
}

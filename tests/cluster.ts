import { importKeys, signAccessToken, type KeyPair } from '@agent-backend/auth';
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { keyFiles, requireBuild } from './helpers.js';

/** Replicas of the split roles sharing one Redis (a unique prefix) and one PostgreSQL schema. */
export interface Cluster {
  readonly gateways: ServiceProcess[];
  readonly apis: ServiceProcess[];
  readonly env: Record<string, string>;
  readonly prefix: string;
  /** A valid access token for `userId`, signed with the cluster's key. */
  token(userId: string, now?: number): Promise<string>;
  /** `ws://` URL of a gateway replica for `path` with query parameters. */
  wsUrl(gateway: number, path: string, query: Record<string, string | undefined>): string;
  stop(): Promise<void>;
}

export async function startCluster(options: {
  gateways: number;
  apis: number;
  env?: Record<string, string>;
}): Promise<Cluster> {
  requireBuild('apps/api/dist/main.js', 'apps/gateway/dist/main.js');
  const files = keyFiles();
  const keys: KeyPair = await importKeys(files);
  const prefix = uniquePrefix('cluster');
  const schema: TestSchema = await createTestSchema('cluster');
  const env: Record<string, string> = {
    REDIS_URL: testRedisUrl(),
    DATABASE_URL: testDatabaseUrl(),
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: prefix,
    JWT_PUBLIC_KEY_FILE: files.publicKeyFile,
    JWT_PRIVATE_KEY_FILE: files.privateKeyFile,
    LOG_LEVEL: 'info',
    ...options.env,
  };
  const start = (role: 'api' | 'gateway', i: number) =>
    startServiceProcess({
      entry: `apps/${role}/dist/main.js`,
      env: { ...env, INSTANCE_ID: `${role}-${i + 1}` },
    });
  const gateways = await Promise.all(
    Array.from({ length: options.gateways }, (_, i) => start('gateway', i)),
  );
  const apis = await Promise.all(Array.from({ length: options.apis }, (_, i) => start('api', i)));
  return {
    gateways,
    apis,
    env,
    prefix,
    token: async (userId, now) => (await signAccessToken(keys, userId, now)).accessToken,
    wsUrl(gateway, path, query) {
      const url = new URL(path, gateways[gateway]!.url.replace('http', 'ws'));
      for (const [key, value] of Object.entries(query))
        if (value !== undefined) url.searchParams.set(key, value);
      return url.toString();
    },
    async stop() {
      await Promise.all([...gateways, ...apis].map((s) => s.stop('SIGKILL')));
      await schema.drop();
    },
  };
}

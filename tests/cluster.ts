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
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/** Replicas of the split roles sharing one Redis (a unique prefix) and one PostgreSQL schema. */
export interface Cluster {
  readonly gateways: ServiceProcess[];
  readonly apis: ServiceProcess[];
  readonly workers: ServiceProcess[];
  readonly env: Record<string, string>;
  readonly prefix: string;
  /** A valid access token for `userId`, signed with the cluster's key. */
  token(userId: string, now?: number): Promise<string>;
  /** `ws://` URL of a gateway replica for `path` with query parameters. */
  wsUrl(gateway: number, path: string, query: Record<string, string | undefined>): string;
  /** Starts one more replica of a role with the cluster's environment (plus `env`). */
  startReplica(
    role: 'api' | 'gateway' | 'worker',
    id: string,
    env?: Record<string, string>,
  ): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export async function startCluster(options: {
  gateways: number;
  apis: number;
  workers?: number;
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
  const start = (role: 'api' | 'gateway' | 'worker', i: number) =>
    startServiceProcess({
      entry: `apps/${role}/dist/main.js`,
      env: { ...env, INSTANCE_ID: `${role}-${i + 1}` },
    });
  const gateways = await Promise.all(
    Array.from({ length: options.gateways }, (_, i) => start('gateway', i)),
  );
  const apis = await Promise.all(Array.from({ length: options.apis }, (_, i) => start('api', i)));
  const workers = await Promise.all(
    Array.from({ length: options.workers ?? 0 }, (_, i) => start('worker', i)),
  );
  return {
    gateways,
    apis,
    workers,
    env,
    prefix,
    token: async (userId, now) => (await signAccessToken(keys, userId, now)).accessToken,
    async startReplica(role, id, extra = {}) {
      const replica = await startServiceProcess({
        entry: `apps/${role}/dist/main.js`,
        env: { ...env, ...extra, INSTANCE_ID: id },
      });
      (role === 'api' ? apis : role === 'gateway' ? gateways : workers).push(replica);
      return replica;
    },
    wsUrl(gateway, path, query) {
      const url = new URL(path, gateways[gateway]!.url.replace('http', 'ws'));
      for (const [key, value] of Object.entries(query))
        if (value !== undefined) url.searchParams.set(key, value);
      return url.toString();
    },
    async stop() {
      await Promise.all([...gateways, ...apis, ...workers].map((s) => s.stop('SIGKILL')));
      await schema.drop();
    },
  };
}

/**
 * A desktop node `nodeId` of `userId` connected to gateway `gateway` of `cluster` and
 * registered (with no tools), its `registered` read.
 */
export async function registerDesktop(
  cluster: Cluster,
  gateway: number,
  userId: string,
  nodeId: string,
): Promise<TestSocket> {
  const token = await cluster.token(userId);
  const socket = await openSocket(
    cluster.wsUrl(gateway, '/ws/desktop', {
      client_id: `desktop_${userId}`,
      node_id: nodeId,
      token,
    }),
  );
  socket.send({ type: 'register', node_id: nodeId, node_type: 'desktop' });
  await socket.next(ofType('registered'));
  return socket;
}

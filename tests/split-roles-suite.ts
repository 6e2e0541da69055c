import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  runEntry,
  startServiceProcess,
  testDatabaseUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { createRedis, closeRedis, type RedisTarget } from '@agent-backend/redis';
import { createRedisPresence } from '@agent-backend/presence';
import { badTokens, json, keyFiles, post, requireBuild } from './helpers.js';

export const ENTRIES = {
  api: 'apps/api/dist/main.js',
  gateway: 'apps/gateway/dist/main.js',
  worker: 'apps/worker/dist/main.js',
  tokenIssue: 'apps/all-in-one/dist/token-issue.js',
};

/**
 * The scaled deployment: separate role processes sharing one Redis and one PostgreSQL, on the
 * Redis `redisEnv()` names (its variables) and `target()` reaches (the test's own connections).
 */
export function describeSplitRoles(
  label: string,
  redisEnv: () => Record<string, string>,
  target: () => string | RedisTarget,
): void {
  describe(`split roles on ${label} and PostgreSQL`, () => {
    const keys = keyFiles();
    const prefix = uniquePrefix('split');
    let schema: TestSchema;
    let env: Record<string, string>;
    const services: Record<string, ServiceProcess> = {};

    beforeAll(async () => {
      requireBuild(...Object.values(ENTRIES));
      schema = await createTestSchema('split');
      env = {
        ...redisEnv(),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: prefix,
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      };
      // Both API replicas migrate the same fresh schema at the same moment.
      const started = await Promise.all(
        (['api-1', 'api-2', 'gateway-1', 'worker-1'] as const).map((id) =>
          startServiceProcess({
            entry: ENTRIES[id.split('-')[0] as 'api' | 'gateway' | 'worker'],
            // The worker verifies no tokens, so it runs without JWT keys.
            env: id.startsWith('worker')
              ? {
                  ...env,
                  INSTANCE_ID: id,
                  JWT_PUBLIC_KEY_FILE: undefined,
                  JWT_PRIVATE_KEY_FILE: undefined,
                }
              : { ...env, INSTANCE_ID: id },
          }),
        ),
      );
      ['api-1', 'api-2', 'gateway-1', 'worker-1'].forEach((id, i) => (services[id] = started[i]!));
    });
    afterAll(async () => {
      await Promise.all(Object.values(services).map((s) => s.stop('SIGKILL')));
      await schema?.drop();
    });

    it('every replica is ready with the dependencies its role uses', async () => {
      const both = { postgres: { ok: true }, redis: { ok: true } };
      for (const [id, checks] of [
        ['api-1', both],
        ['api-2', both],
        ['worker-1', both],
        ['gateway-1', { redis: { ok: true } }],
      ] as const) {
        expect(await json(await fetch(`${services[id]!.url}/readyz`)), id).toEqual({
          status: 200,
          body: { status: 'ready', checks },
        });
      }
    });

    it("an api replica's ready line says the playground needs the gateway behind the same origin", () => {
      const api = services['api-1']!;
      const messages = api.stdout.map((line) => (JSON.parse(line) as { msg?: string }).msg);
      expect(messages).toContain(
        `api ready at ${api.url} (database: PostgreSQL; queues and bus: Redis; playground: ${api.url}/, ` +
          'which needs the gateway behind the same origin, as infra/nginx.conf sets up)',
      );
    });

    it('the gateway announces itself in shared presence', async () => {
      const redis = createRedis(target(), { name: 'test-presence' });
      const presence = createRedisPresence({ redis, prefix });
      try {
        expect(await presence.liveReplicas()).toContain('gateway-1');
      } finally {
        await presence.close();
        await closeRedis(redis);
      }
    });

    it('a token issued against PostgreSQL refreshes on every API replica', async () => {
      const issued = await runEntry(ENTRIES.tokenIssue, ['dana'], env);
      expect(issued.code, issued.stderr).toBe(0);
      const { refreshToken, accessToken } = JSON.parse(issued.stdout) as {
        refreshToken: string;
        accessToken: string;
      };
      for (const id of ['api-1', 'api-2']) {
        const res = await json(
          await post(`${services[id]!.url}/api/auth/refresh`, { refreshToken }),
        );
        expect(res.status, id).toBe(200);
        expect(res.body).toMatchObject({ expiresIn: 3600 });
        // A token minted by one replica is accepted by the other (shared keys).
        const other = id === 'api-1' ? 'api-2' : 'api-1';
        const me = await fetch(`${services[other]!.url}/api/auth/whoami`, {
          headers: { authorization: `Bearer ${(res.body as { accessToken: string }).accessToken}` },
        });
        expect(await me.json()).toEqual({ user_id: 'dana' });
      }
      const me = await fetch(`${services['api-2']!.url}/api/auth/whoami`, {
        headers: { authorization: `Bearer ${accessToken}` },
      });
      expect(me.status).toBe(200);
    });

    it('expired and revoked refresh tokens get 401 { error } everywhere', async () => {
      const tokens = await Promise.all(
        ['erin', 'frank'].map(async (user) => {
          const issued = await runEntry(ENTRIES.tokenIssue, [user], env);
          return (JSON.parse(issued.stdout) as { refreshToken: string }).refreshToken;
        }),
      );
      const client = new pg.Client({
        connectionString: testDatabaseUrl(),
        options: `-c search_path=${schema.schema}`,
      });
      await client.connect();
      try {
        await client.query(
          `UPDATE refresh_tokens SET expires_at = now() - interval '1 second' WHERE user_id = 'erin'`,
        );
        await client.query(`UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = 'frank'`);
        const { rows } = await client.query('SELECT token_hash FROM refresh_tokens');
        for (const token of tokens) expect(JSON.stringify(rows)).not.toContain(token);
      } finally {
        await client.end();
      }
      for (const id of ['api-1', 'api-2']) {
        for (const refreshToken of tokens) {
          expect(
            await json(await post(`${services[id]!.url}/api/auth/refresh`, { refreshToken })),
          ).toEqual({
            status: 401,
            body: { error: 'refresh token is invalid or expired' },
          });
        }
      }
    });

    it('bad access tokens get 401 on every API replica', async () => {
      for (const [name, token] of Object.entries(await badTokens(keys))) {
        for (const id of ['api-1', 'api-2']) {
          const res = await fetch(`${services[id]!.url}/api/auth/whoami`, {
            headers: { authorization: `Bearer ${token}` },
          });
          expect(res.status, `${name} on ${id}`).toBe(401);
        }
      }
    });

    it('each role stops cleanly on SIGTERM and the gateway leaves presence', async () => {
      const codes = await Promise.all(Object.values(services).map((s) => s.stop('SIGTERM')));
      expect(codes).toEqual([0, 0, 0, 0]);
      const redis = createRedis(target(), { name: 'test-presence' });
      const presence = createRedisPresence({ redis, prefix });
      try {
        expect(await presence.liveReplicas()).not.toContain('gateway-1');
      } finally {
        await presence.close();
        await closeRedis(redis);
      }
    });
  });
}

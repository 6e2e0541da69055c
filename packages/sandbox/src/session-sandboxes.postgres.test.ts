import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisEphemeralStore, type EphemeralStore } from '@agent-backend/ephemeral';
import { createPostgresDatabase, migrate, type Database } from '@agent-backend/store';
import {
  createTestSchema,
  redisTestKeys,
  testDatabaseUrl,
  testRedisUrl,
  type TestSchema,
} from '@agent-backend/testing';
import { BubblewrapSandboxProvider } from './local/bwrap-provider.js';
import { SessionSandboxes } from './session-sandboxes.js';

const redisKeys = redisTestKeys('sbx', { beforeAll, afterAll });

/** Two "replicas": each its own PostgreSQL pool, Redis connection and provider instance. */
describe('session sandboxes across replicas (PostgreSQL + Redis)', () => {
  let schema: TestSchema;
  const open: Array<Database | EphemeralStore> = [];
  const root = mkdtempSync(join(tmpdir(), 'sbx-sessions-'));
  const stateDir = join(root, 'state');
  const work = join(root, 'work');
  mkdirSync(work, { recursive: true });

  beforeAll(async () => {
    schema = await createTestSchema('sandboxes');
    const db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema });
    await migrate(db);
    await db.close();
  });
  afterAll(async () => {
    await Promise.all(open.map((o) => o.close()));
    await schema.drop();
  });

  const replica = async (prefix: string) => {
    const db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema });
    const ephemeral = createRedisEphemeralStore({ url: testRedisUrl(), prefix });
    open.push(db, ephemeral);
    return {
      sessions: new SessionSandboxes(db, ephemeral, {
        deployment: 'race',
        idleMs: 60_000,
        maxIdleMs: 120_000,
      }),
      provider: new BubblewrapSandboxProvider({ stateDir }),
    };
  };

  it('creates exactly one sandbox when two replicas ask for a new session at once', async () => {
    const prefix = redisKeys.fresh();
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    const sandboxes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? a : b).sessions.acquire((i % 2 ? a : b).provider, 'u1', 'race-session', work),
      ),
    );
    expect(new Set(sandboxes.map((s) => s.id)).size).toBe(1);
    expect(readdirSync(stateDir).filter((d) => d.startsWith('sbx_'))).toHaveLength(1);
    expect((await a.provider.list('race')).map((s) => s.id)).toEqual([sandboxes[0]!.id]);
  });

  it("refuses another user's session sandbox", async () => {
    const prefix = redisKeys.fresh();
    const a = await replica(prefix);
    await a.sessions.acquire(a.provider, 'owner', 'owned-session', work);
    await expect(
      a.sessions.acquire(a.provider, 'intruder', 'owned-session', work),
    ).rejects.toMatchObject({ code: 'not_found' });
  });
});

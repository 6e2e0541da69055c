import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisEphemeralStore, type EphemeralStore } from '@agent-backend/ephemeral';
import { createPostgresDatabase, migrate, type Database } from '@agent-backend/store';
import {
  createTestSchema,
  redisTestKeys,
  startFakeE2B,
  testDatabaseUrl,
  testRedisUrl,
  type TestSchema,
} from '@agent-backend/testing';
import { E2BSandboxProvider } from './cloud/e2b-provider.js';
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

  it("never hands another user's session sandbox out: the same session id is a sandbox per user", async () => {
    const prefix = redisKeys.fresh();
    const a = await replica(prefix);
    const owned = await a.sessions.acquire(a.provider, 'owner', 'owned-session', work);
    const intruders = await a.sessions.acquire(a.provider, 'intruder', 'owned-session', work);
    expect(intruders.id).not.toBe(owned.id);
    expect(await a.sessions.find(a.provider, 'stranger', 'owned-session')).toBeUndefined();
    expect((await a.sessions.acquire(a.provider, 'owner', 'owned-session', work)).id).toBe(
      owned.id,
    );
  });

  it('goes on past a sandbox the provider refuses to pause or destroy, and retries it next sweep', async () => {
    const fake = await startFakeE2B();
    try {
      const db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema });
      const ephemeral = createRedisEphemeralStore({
        url: testRedisUrl(),
        prefix: redisKeys.fresh(),
      });
      open.push(db, ephemeral);
      const sessions = new SessionSandboxes(db, ephemeral, {
        deployment: 'sweep-isolation',
        leaseMs: 1_000,
        idleMs: 60_000,
        maxIdleMs: 120_000,
      });
      const provider = new E2BSandboxProvider({
        apiKey: fake.apiKey,
        template: 'base',
        apiUrl: fake.apiUrl,
        sandboxUrl: fake.sandboxUrl,
        lifetimeMs: 3_600_000,
      });
      const [a, b, c] = await Promise.all(
        ['iso-a', 'iso-b', 'iso-c'].map((id) => sessions.acquire(provider, 'u1', id)),
      );
      // One the sweep finds by metadata only (no session records it).
      const orphan = await provider.create({
        metadata: { userId: 'u1', sessionId: 'lost', deployment: 'sweep-isolation' },
      });
      // E2B answers 500 for b and for the orphan, whatever is asked of them.
      fake.failing.add(b!.id);
      fake.failing.add(orphan.id);
      const state = (id: string) => fake.sandboxes.get(id)?.state ?? 'gone';

      const idle = await sessions.sweep([provider], Date.now() + 90_000);
      expect(idle).toMatchObject({ paused: 2, orphans: 0 });
      expect(idle.failures).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ step: 'pause', provider: 'e2b', sandboxId: b!.id }),
          expect.objectContaining({ step: 'orphan', provider: 'e2b', sandboxId: orphan.id }),
        ]),
      );
      expect(idle.failures).toHaveLength(2);
      expect(idle.failures[0]!.message).toMatch(/E2B: could not/);
      expect(JSON.stringify(idle.failures)).not.toContain(fake.apiKey);
      expect([a, b, c].map((s) => state(s!.id))).toEqual(['paused', 'running', 'paused']);

      const old = await sessions.sweep([provider], Date.now() + 200_000);
      expect(old).toMatchObject({ destroyed: 2, orphans: 0 });
      expect(old.failures.map((f) => [f.step, f.sandboxId])).toEqual(
        expect.arrayContaining([
          ['destroy', b!.id],
          ['orphan', orphan.id],
        ]),
      );
      expect([a, b, c, orphan].map((s) => state(s!.id))).toEqual([
        'gone',
        'running',
        'gone',
        'running',
      ]);
      // Still recorded, so the next sweep tries it again; once E2B answers, it is gone.
      fake.failing.clear();
      const retried = await sessions.sweep([provider], Date.now() + 200_000);
      expect(retried).toEqual({ paused: 0, destroyed: 1, orphans: 1, failures: [] });
      expect(fake.sandboxes.size).toBe(0);
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id LIKE 'iso-%'`,
      );
      expect(rows[0]!.n).toBe(0);
    } finally {
      await fake.close();
    }
  });
});

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importKeys, signAccessToken } from '@agent-backend/auth';
import { createPgliteDatabase } from '@agent-backend/store';
import {
  startScriptedModel,
  startServiceProcess,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { keyFiles, requireBuild, tempDir } from './helpers.js';
import {
  INTERNAL_SECRET,
  SERVICE_TOKEN,
  eraseMe,
  expectEverythingIn,
  exportOf,
  giveEverything,
  mentionsIn,
  waitUntil,
  type Deployment,
} from './user-data-scenario.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const ERIN = 'u-erin-9k';
const FINN = 'u-finn-9k';
const GUS = 'u-gus-9k';

/**
 * A user's data exported and erased on the embedded default: the all-in-one on PGlite and the
 * in-process engines. The store is read from the test while the service is stopped (PGlite
 * admits one process).
 */
describe('a user’s data exported and erased on the all-in-one', () => {
  const dataDir = tempDir('user-data');
  const files = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess | undefined;
  let d: Deployment;
  const start = async (env: Record<string, string> = {}) => {
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: dataDir,
        JWT_PUBLIC_KEY_FILE: files.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: files.privateKeyFile,
        AUTH_SERVICE_TOKEN: SERVICE_TOKEN,
        INTERNAL_API_SECRET: INTERNAL_SECRET,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        ERASURE_LEASE_MS: '1000',
        LOG_LEVEL: 'debug',
        ...env,
      },
    });
    return service;
  };
  /** Runs `work` on the service's PGlite database while the service is stopped. */
  const withStore = async <T>(work: (sql: Parameters<typeof mentionsIn>[0]) => Promise<T>) => {
    await service?.stop('SIGTERM');
    service = undefined;
    const db = await createPgliteDatabase({ dataDir: join(dataDir, 'pglite'), vector: false });
    try {
      return await work(async (text, params) => (await db.query(text, params)).rows as never);
    } finally {
      await db.close();
    }
  };

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    const keys = await importKeys(files);
    await start();
    d = {
      api: () => service!.url,
      wsUrl: (path, query) => {
        const url = new URL(path, service!.url.replace('http', 'ws'));
        for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
        return url.toString();
      },
      token: async (userId) => (await signAccessToken(keys, userId, Date.now() - 1000)).accessToken,
      model,
    };
  }, 120_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('exports everything, then erases it from PGlite and the in-process engines', async () => {
    const erin = await giveEverything(d, ERIN);
    const finn = await giveEverything(d, FINN);
    expectEverythingIn(await exportOf(d.api(0), erin.token), erin);

    const erased = await eraseMe(d.api(0), erin.token, ERIN);
    expect(erased).toMatchObject({
      status: 200,
      body: {
        user_id: ERIN,
        removed: { sessions: 1, runs: 2, memories: 1, knowledge_documents: 1 },
      },
    });
    for (const socket of erin.sockets)
      expect(await socket.closed).toEqual({ code: 4401, reason: 'token has been revoked' });
    const whoami = await fetch(`${d.api(0)}/api/auth/whoami`, {
      headers: { authorization: `Bearer ${erin.token}` },
    });
    expect(whoami.status).toBe(401);
    // Nothing of theirs is in memory either: the export of what is left is empty.
    await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
    const after = await exportOf(d.api(0), await signedNow(ERIN));
    for (const [name, content] of after) {
      if (name.endsWith('.jsonl')) expect(content.length, name).toBe(0);
    }
    expect(await whoamiStatus(d.api(0), finn.token)).toBe(200);
    for (const socket of finn.sockets) expect(socket.ws.readyState).toBe(socket.ws.OPEN);

    const [erinLeft, finnLeft] = await withStore(async (sql) => [
      await mentionsIn(sql, ERIN),
      await mentionsIn(sql, FINN),
    ]);
    expect(erinLeft).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
    expect(finnLeft).toContain('agent_messages.user_id');
    expect(finnLeft).toContain('memories.user_id');
    expect(finnLeft).toContain('knowledge_documents.user_id');
  }, 180_000);

  it('an erasure cut short by SIGKILL is finished when the all-in-one starts again', async () => {
    await withStore(async (sql) => {
      await sql(
        `INSERT INTO agent_sessions (user_id, session_id)
         SELECT $1, 's' || i FROM generate_series(1, 200) i`,
        [GUS],
      );
      await sql(
        `INSERT INTO agent_messages (user_id, session_id, seq, run_id, message)
         SELECT $1, 's' || i, m, 'r' || i, '{"role":"user","content":"hi"}'
         FROM generate_series(1, 200) i, generate_series(1, 3) m`,
        [GUS],
      );
      return undefined;
    });
    const slow = await start({ ERASURE_BATCH_SIZE: '5' });
    const request = eraseMe(slow.url, await d.token(GUS), GUS).catch((error: unknown) => error);
    await waitUntil(async () =>
      slow.stdout.some((line) => line.includes('erasure: batch removed')),
    );
    await slow.stop('SIGKILL');
    expect(await request).toBeInstanceOf(Error);
    const cut = await withStore(async (sql) => ({
      erasures: await sql<{ status: string }>(`SELECT status FROM erasures WHERE user_id = $1`, [
        GUS,
      ]),
      sessions: await sql(`SELECT 1 FROM agent_sessions WHERE user_id = $1`, [GUS]),
    }));
    expect(cut.erasures).toEqual([{ status: 'pending' }]);
    expect(cut.sessions.length).toBeGreaterThan(0);

    const restarted = await start();
    await waitUntil(
      async () => restarted.stdout.some((line) => line.includes('erasure cut short finished')),
      30_000,
    );
    const done = await withStore(async (sql) => ({
      erasures: await sql<{ status: string; removed: Record<string, number> }>(
        `SELECT status, removed FROM erasures WHERE user_id = $1`,
        [GUS],
      ),
      left: await mentionsIn(sql, GUS),
    }));
    expect(done.erasures).toMatchObject([
      { status: 'done', removed: { sessions: 200, messages: 600 } },
    ]);
    expect(done.left).toEqual(['erasures.user_id', 'token_cutoffs.user_id']);
  }, 180_000);

  async function whoamiStatus(baseUrl: string, token: string): Promise<number> {
    return (
      await fetch(`${baseUrl}/api/auth/whoami`, { headers: { authorization: `Bearer ${token}` } })
    ).status;
  }
  async function signedNow(userId: string): Promise<string> {
    return (await signAccessToken(await importKeys(files), userId)).accessToken;
  }
});

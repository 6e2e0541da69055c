import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRunner, runRequest, sessionLeaseKey } from '@agent-backend/agent-runtime';
import { loadConfig } from '@agent-backend/config';
import { createEngines, type Engines } from '@agent-backend/engines';
import { createLogger } from '@agent-backend/logger';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import { startTakeoverSweep } from './takeover-sweep.js';

/**
 * The takeover sweep over real PostgreSQL: a run whose holder died is taken over, except a run
 * of a scheduled task or chat message, whose own job is retried by the queue (a takeover too
 * would run the occurrence twice): that one is recorded as ended.
 */
describe('takeover sweep', () => {
  let schema: TestSchema;
  let engines: Engines;
  let runner: AgentRunner;
  const logger = createLogger({ level: 'silent' });

  beforeAll(async () => {
    schema = await createTestSchema('sweep');
    const config = loadConfig('all-in-one', {
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
    });
    engines = await createEngines(config, logger, { migrate: true });
    runner = new AgentRunner({ db: engines.db, ephemeral: engines.ephemeral, logger });
  });
  afterAll(async () => {
    await engines?.close();
    await schema?.drop();
  });

  /** A run stored `running` whose holder died: its session lease is gone. */
  const orphan = async (userId: string, sessionId: string) => {
    const prepared = await runner.prepare(
      runRequest({
        userId,
        sessionId,
        message: 'hello',
        model: {
          baseUrl: 'http://127.0.0.1:9/v1',
          apiKey: 'sk-unused',
          name: 'm',
          temperature: 0,
          chosenBy: 'operator',
        },
      }),
      { background: true },
    );
    await prepared.handOver();
    await engines.ephemeral.delete(sessionLeaseKey(userId, sessionId));
    return prepared.runId;
  };

  it('ends a scheduled or chat run whose holder died instead of taking it over', async () => {
    const task = await orphan('task-user', 'task:t-sweep:1795831503000:1');
    const chat = await orphan('chat-user', 'chat:lark:oc_sweep');
    const plain = await orphan('plain-user', 'plain-session');
    const stop = startTakeoverSweep({ engines, runner, logger }, { intervalMs: 50, leaseTtlMs: 0 });
    try {
      await expect
        .poll(async () => (await runner.runs.load(task))?.status, { timeout: 5_000 })
        .toBe('aborted');
      await expect
        .poll(async () => (await runner.runs.load(chat))?.status, { timeout: 5_000 })
        .toBe('aborted');
      // A run of a session of the client's is left for its takeover job.
      expect((await runner.runs.load(plain))?.status).toBe('running');
    } finally {
      await stop();
    }
  });
});

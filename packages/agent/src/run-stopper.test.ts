import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentRunner,
  ConversationRepository,
  runRequest,
  type PreparedRun,
} from '@agent-backend/agent-runtime';
import { loadConfig } from '@agent-backend/config';
import { createEngines, type Engines } from '@agent-backend/engines';
import { createLogger } from '@agent-backend/logger';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';
import type { HostedRun } from './hosted-run.js';
import { RunStopper } from './run-stopper.js';

/**
 * A cancel of a run that no process runs (a background run handed over for its start job, not
 * started yet) over real PostgreSQL: the stopper ends it in the store, so the start job's adopt
 * refuses it afterwards.
 */
describe('RunStopper', () => {
  let schema: TestSchema;
  let engines: Engines;
  let runner: AgentRunner;
  let stopper: RunStopper;
  const logger = createLogger({ level: 'silent' });

  beforeAll(async () => {
    schema = await createTestSchema('stopper');
    // PostgreSQL (migrated), and the in-process bus, ephemeral store and run log (no REDIS_URL):
    // the engines of an all-in-one on an external database.
    const config = loadConfig('all-in-one', {
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
    });
    engines = await createEngines(config, logger, { migrate: true });
    runner = new AgentRunner({ db: engines.db, ephemeral: engines.ephemeral, logger });
    stopper = new RunStopper(
      engines.bus,
      new Map<string, HostedRun>(),
      new ConversationRepository(engines.db),
      engines.runLog,
      logger,
      runner.runs,
      engines.ephemeral,
    );
  });
  afterAll(async () => {
    await stopper?.close();
    await engines?.close();
    await schema?.drop();
  });

  /** A background run as the API leaves it for a worker: stored `running`, lease handed over. */
  const queuedRun = async (userId: string): Promise<PreparedRun> => {
    const prepared = await runner.prepare(
      runRequest({
        userId,
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
    return prepared;
  };

  it('ends a run nobody runs once the wait is over, and its start job then refuses it', async () => {
    const queued = await queuedRun('u-stop-1');
    expect((await runner.runs.load(queued.runId))?.status).toBe('running');

    const stopped = await stopper.stop('u-stop-1', queued.runId, 100);
    expect(stopped).toMatchObject({ status: 'aborted', error: { code: 'run_aborted' } });
    expect(stopped?.ended_at).not.toBeNull();
    // What the worker's start and takeover jobs call: an ended run is not continued.
    expect(await runner.adopt(queued.runId, { exclusive: false })).toBeNull();
    expect(await runner.adopt(queued.runId, { exclusive: true })).toBeNull();
    expect(await runner.runs.running(new Date(Date.now() + 60_000))).toEqual([]);
  });

  it('ends each of the user’s unfinished runs for an erasure, and no other user’s', async () => {
    const mine = await queuedRun('u-stop-2');
    const theirs = await queuedRun('u-stop-3');

    expect(await stopper.stopUser('u-stop-2', 100)).toBe(1);
    expect((await runner.runs.load(mine.runId))?.status).toBe('aborted');
    expect((await runner.runs.load(theirs.runId))?.status).toBe('running');
    expect(await runner.runs.unfinished('u-stop-2')).toEqual([]);
  });

  it('leaves a run that has ended as it is', async () => {
    const queued = await queuedRun('u-stop-4');
    await runner.sessions.finishRun(queued.runId, 'done');

    expect(await runner.runs.abandon(queued.runId)).toBe(false);
    expect(await stopper.stop('u-stop-4', queued.runId, 100)).toMatchObject({ status: 'done' });
  });
});

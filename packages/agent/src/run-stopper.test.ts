import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationRepository } from '@agent-backend/agent-runtime';
import type { HostedRun } from './hosted-run.js';
import { RunStopper } from './run-stopper.js';
import { useEnginesFixture } from './testing/engines-fixture.js';

/**
 * A cancel of a run that no process runs (a background run handed over for its start job, not
 * started yet) over real PostgreSQL: the stopper ends it in the store, so the start job's adopt
 * refuses it afterwards.
 */
describe('RunStopper', () => {
  const fixture = useEnginesFixture('stopper');
  let stopper: RunStopper;

  beforeAll(() => {
    const { engines, runner, logger } = fixture;
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
  });
  /** A background run as the API leaves it for a worker: stored `running`, lease handed over. */
  const queuedRun = (userId: string) => fixture.handedOverRun(userId);

  it('ends a run nobody runs once the wait is over, and its start job then refuses it', async () => {
    const queued = await queuedRun('u-stop-1');
    expect((await fixture.runner.runs.load(queued.runId))?.status).toBe('running');

    const stopped = await stopper.stop('u-stop-1', queued.runId, 100);
    expect(stopped).toMatchObject({ status: 'aborted', error: { code: 'run_aborted' } });
    expect(stopped?.ended_at).not.toBeNull();
    // What the worker's start and takeover jobs call: an ended run is not continued.
    expect(await fixture.runner.adopt(queued.runId, { exclusive: false })).toBeNull();
    expect(await fixture.runner.adopt(queued.runId, { exclusive: true })).toBeNull();
    expect(await fixture.runner.runs.running(new Date(Date.now() + 60_000))).toEqual([]);
  });

  it('ends each of the user’s unfinished runs for an erasure, and no other user’s', async () => {
    const mine = await queuedRun('u-stop-2');
    const theirs = await queuedRun('u-stop-3');

    expect(await stopper.stopUser('u-stop-2', 100)).toBe(1);
    expect((await fixture.runner.runs.load(mine.runId))?.status).toBe('aborted');
    expect((await fixture.runner.runs.load(theirs.runId))?.status).toBe('running');
    expect(await fixture.runner.runs.unfinished('u-stop-2')).toEqual([]);
  });

  it('leaves a run that has ended as it is', async () => {
    const queued = await queuedRun('u-stop-4');
    await fixture.runner.sessions.finishRun(queued.runId, 'done');

    expect(await fixture.runner.runs.abandon(queued.runId)).toBe(false);
    expect(await stopper.stop('u-stop-4', queued.runId, 100)).toMatchObject({ status: 'done' });
  });
});

import { describe, expect, it } from 'vitest';
import { sessionLeaseKey } from '@agent-backend/agent-runtime';
import { startTakeoverSweep } from './takeover-sweep.js';
import { useEnginesFixture } from './testing/engines-fixture.js';

/**
 * The takeover sweep over real PostgreSQL: a run whose holder died is taken over, except a run
 * of a scheduled task or chat message, whose own job is retried by the queue (a takeover too
 * would run the occurrence twice): that one is recorded as ended.
 */
describe('takeover sweep', () => {
  const fixture = useEnginesFixture('sweep');

  /** A run stored `running` whose holder died: its session lease is gone. */
  const orphan = async (userId: string, sessionId: string) => {
    const prepared = await fixture.handedOverRun(userId, sessionId);
    await fixture.engines.ephemeral.delete(sessionLeaseKey(userId, sessionId));
    return prepared.runId;
  };

  it('ends a scheduled or chat run whose holder died instead of taking it over', async () => {
    const task = await orphan('task-user', 'task:t-sweep:1795831503000:1');
    const chat = await orphan('chat-user', 'chat:lark:oc_sweep');
    const plain = await orphan('plain-user', 'plain-session');
    const stop = startTakeoverSweep(fixture, { intervalMs: 50, leaseTtlMs: 0 });
    try {
      await expect
        .poll(async () => (await fixture.runner.runs.load(task))?.status, { timeout: 5_000 })
        .toBe('aborted');
      await expect
        .poll(async () => (await fixture.runner.runs.load(chat))?.status, { timeout: 5_000 })
        .toBe('aborted');
      // A run of a session of the client's is left for its takeover job.
      expect((await fixture.runner.runs.load(plain))?.status).toBe('running');
    } finally {
      await stop();
    }
  });

  it("reaches a dead holder's run behind a full page of live ones", async () => {
    // 100 older runs whose holders are alive (their leases stand): a whole page of the sweep's
    // default size, none to take over.
    for (let i = 0; i < 100; i++) await fixture.handedOverRun(`live-user-${i % 10}`);
    const lost = await orphan('late-user', 'chat:lark:oc_late');
    const stop = startTakeoverSweep(fixture, { intervalMs: 50, leaseTtlMs: 0 });
    try {
      await expect
        .poll(async () => (await fixture.runner.runs.load(lost))?.status, { timeout: 5_000 })
        .toBe('aborted');
    } finally {
      await stop();
    }
  });
});

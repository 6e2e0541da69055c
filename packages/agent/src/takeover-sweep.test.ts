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

  /** Runs `check` while a sweep looks every 50 ms at every run, then stops the sweep. */
  const whileSweeping = async (check: () => Promise<void>) => {
    const stop = startTakeoverSweep(fixture, { intervalMs: 50, leaseTtlMs: 0 });
    try {
      await check();
    } finally {
      await stop();
    }
  };

  const statusOf = (runId: string) =>
    expect.poll(async () => (await fixture.runner.runs.load(runId))?.status, { timeout: 5_000 });

  it('ends a scheduled or chat run whose holder died instead of taking it over', async () => {
    const task = await orphan('task-user', 'task:t-sweep:1795831503000:1');
    const chat = await orphan('chat-user', 'chat:lark:oc_sweep');
    const plain = await orphan('plain-user', 'plain-session');
    await whileSweeping(async () => {
      await statusOf(task).toBe('aborted');
      await statusOf(chat).toBe('aborted');
      // A run of a session of the client's is left for its takeover job.
      expect((await fixture.runner.runs.load(plain))?.status).toBe('running');
    });
  });

  it("reaches a dead holder's run behind a full page of live ones", async () => {
    // 100 older runs whose holders are alive (their leases stand): a whole page of the sweep,
    // none to take over.
    for (let i = 0; i < 100; i++) await fixture.handedOverRun(`live-user-${i % 10}`);
    const lost = await orphan('late-user', 'chat:lark:oc_late');
    await whileSweeping(() => statusOf(lost).toBe('aborted'));
  });
});

import {
  isReservedSessionId,
  sessionLeaseHolder,
  type AgentRunner,
  type StoredRun,
} from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import type { Logger } from '@agent-backend/logger';
import { enqueueRunJob } from './run-jobs.js';

/** Runs read per statement of a sweep. */
const SWEEP_PAGE = 100;

/**
 * Looks every `intervalMs` for runs recorded as `running` whose session lease expired (their
 * holder died: SIGKILL, OOM, a lost node) and queues a `takeover` job for each. Any worker may
 * queue one; the job takes the lease with `ifAbsent`, so one holder continues the run. A run of
 * a scheduled task or a chat message (a reserved session id) is not taken over but recorded as
 * ended (`aborted`): its own job, retried by the queue, runs the occurrence or the message again
 * in a run of its own, and a takeover as well would run it twice. Every run recorded `running`
 * and older than the lease is looked at, a page at a time. Returns the stop function.
 */
export function startTakeoverSweep(
  deps: {
    readonly engines: Pick<Engines, 'jobs' | 'ephemeral'>;
    readonly runner: AgentRunner;
    readonly logger: Logger;
  },
  options: {
    readonly intervalMs: number;
    readonly leaseTtlMs: number;
  },
): () => Promise<void> {
  const { engines, runner, logger } = deps;
  let sweeping: Promise<void> = Promise.resolve();
  const sweep = async () => {
    const startedBefore = new Date(Date.now() - options.leaseTtlMs);
    // Page by page: the oldest runs may all be alive (long tool calls), and a sweep that looked
    // at them alone would never reach a dead holder's younger runs.
    for (let after: string | undefined; ;) {
      const page = await runner.runs.running(startedBefore, SWEEP_PAGE, after);
      await takeOverOrphans(page);
      if (page.length < SWEEP_PAGE) return;
      after = page[page.length - 1]!.runId;
    }
  };
  const takeOverOrphans = async (page: StoredRun[]) => {
    // The leases of a page read together, not one round trip after another.
    const holders = await Promise.all(
      page.map((run) => sessionLeaseHolder(engines.ephemeral, run.userId, run.sessionId)),
    );
    for (const [i, run] of page.entries()) {
      if (holders[i] !== null) continue;
      if (isReservedSessionId(run.sessionId)) {
        if (await runner.runs.abandon(run.runId)) {
          logger.warn(
            { runId: run.runId, sessionId: run.sessionId },
            'run lost its holder; its job runs it again, so it is recorded as ended',
          );
        }
        continue;
      }
      logger.warn(
        { runId: run.runId, sessionId: run.sessionId },
        'run lost its holder; taking it over',
      );
      const round = Math.floor(Date.now() / options.intervalMs);
      await enqueueRunJob(
        engines.jobs,
        { run_id: run.runId, kind: 'takeover' },
        { jobId: `takeover-${run.runId}-${round}` },
      );
    }
  };
  const timer = setInterval(() => {
    sweeping = sweeping
      .then(sweep)
      .catch((err: unknown) => logger.warn({ err }, 'takeover sweep failed; retrying'));
  }, options.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await sweeping;
  };
}

import {
  isReservedSessionId,
  sessionLeaseHolder,
  type AgentRunner,
} from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import type { Logger } from '@agent-backend/logger';
import { enqueueRunJob } from './run-jobs.js';

/**
 * Looks every `intervalMs` for runs recorded as `running` whose session lease expired (their
 * holder died: SIGKILL, OOM, a lost node) and queues a `takeover` job for each. Any worker may
 * queue one; the job takes the lease with `ifAbsent`, so one holder continues the run. A run of
 * a scheduled task or a chat message (a reserved session id) is not taken over but recorded as
 * ended (`aborted`): its own job, retried by the queue, runs the occurrence or the message again
 * in a run of its own, and a takeover as well would run it twice. Returns the stop function.
 */
export function startTakeoverSweep(
  deps: {
    readonly engines: Pick<Engines, 'jobs' | 'ephemeral'>;
    readonly runner: AgentRunner;
    readonly logger: Logger;
  },
  options: { readonly intervalMs: number; readonly leaseTtlMs: number },
): () => Promise<void> {
  const { engines, runner, logger } = deps;
  let sweeping: Promise<void> = Promise.resolve();
  const sweep = async () => {
    const candidates = await runner.runs.running(new Date(Date.now() - options.leaseTtlMs));
    for (const run of candidates) {
      const holder = await sessionLeaseHolder(engines.ephemeral, run.userId, run.sessionId);
      if (holder !== null) continue;
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

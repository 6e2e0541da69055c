import { z } from 'zod';
import {
  AGENT_RUNS_QUEUE,
  AgentRunError,
  ConversationRepository,
  type AgentRunner,
  type PreparedRun,
} from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import { ApprovalStore } from '@agent-backend/hitl';
import type { Logger } from '@agent-backend/logger';
import type { SuspendedApproval } from '@agent-backend/protocol';
import { HostedRun, remoteAttachKey } from './hosted-run.js';
import { RunStopper } from './run-stopper.js';
import { takeoverState } from './takeover-state.js';

export { AGENT_RUNS_QUEUE };

/**
 * A job of {@link AGENT_RUNS_QUEUE}: `start` a background run handed over by the API replica
 * that accepted it; `resume` a suspended run once every held call has an outcome (a decision or
 * its timeout; a no-op before); `takeover` a run whose holder died (its lease expired).
 */
export const AgentRunJob = z.object({
  run_id: z.string().min(1).max(200),
  kind: z.enum(['start', 'resume', 'takeover']),
});
export type AgentRunJob = z.infer<typeof AgentRunJob>;

/** How runs are hosted in this process (`AGENT_*` settings). */
export interface RunHostSettings {
  readonly disconnectGraceMs: number;
  readonly suspendAfterMs?: number;
  /**
   * A worker's runs still going at the end of its drain are handed over to another worker
   * (`AGENT_TAKEOVER`); otherwise they end with `server_shutdown`. @default false
   */
  readonly handOverOnDrain?: boolean;
}

/** A run's slot of `MAX_CONCURRENT_RUNS_PER_USER` in the process running it (docs/limits.md). */
export interface RunSlot {
  release(): Promise<void>;
  /** Stops renewing it without freeing it: the run's next process takes it again. */
  leave(): void;
}

export interface RunJobsDeps {
  readonly engines: Pick<Engines, 'jobs' | 'runLog' | 'ephemeral' | 'bus' | 'db'>;
  readonly runner: AgentRunner;
  readonly logger: Logger;
  readonly settings: RunHostSettings;
  /**
   * Takes the slot of a run that continues here (named after the run: the one its API replica
   * took at admission, or its previous holder's). Absent: runs hold no slot here.
   */
  readonly runSlot?: (userId: string, runId: string) => Promise<RunSlot>;
}

/** The runs a process hosts from {@link AGENT_RUNS_QUEUE}, and how it lets go of them. */
export interface AgentRunsHost {
  readonly runs: ReadonlyMap<string, HostedRun>;
  /**
   * The drain of a shutdown: runs waiting for approvals suspend at once, the others may finish
   * for `drainMs`; those still going are then handed over (see `RunHandOver`): stored, their
   * lease released, a `takeover` job queued, so another worker continues each from its last
   * step (without `handOverOnDrain`: they end with `server_shutdown`). This process takes no
   * more jobs from then on (the consumer is paused): they wait for another worker.
   */
  drain(drainMs: number): Promise<void>;
  /**
   * Cancels runs wherever they run; the one listener for cancels of the runs hosted here (on
   * `RUN_CANCEL_CHANNEL`), so a process hosting runs needs no other.
   */
  readonly stopper: RunStopper;
  /** Stops listening for cancels. */
  close(): Promise<void>;
}

/** Queues a job of {@link AGENT_RUNS_QUEUE}; `delayMs` for an approval's timeout. */
export async function enqueueRunJob(
  jobs: Engines['jobs'],
  job: AgentRunJob,
  options: { jobId: string; delayMs?: number },
): Promise<void> {
  await jobs.add(AGENT_RUNS_QUEUE, job, {
    jobId: options.jobId,
    ...(options.delayMs ? { delayMs: options.delayMs } : {}),
    // A run is continued from its stored state by a takeover, not by retrying its job.
    attempts: 1,
  });
}

/**
 * After a run suspended: a delayed `resume` job at each approval's timeout (which writes
 * `timed_out` with no replica holding the run), and one now, for decisions that arrived while
 * it was suspending.
 */
export async function scheduleResumes(
  jobs: Engines['jobs'],
  runId: string,
  approvals: readonly SuspendedApproval[],
): Promise<void> {
  const now = Date.now();
  await Promise.all([
    enqueueRunJob(jobs, { run_id: runId, kind: 'resume' }, { jobId: `resume-${runId}-${now}` }),
    ...approvals.map((approval) =>
      enqueueRunJob(
        jobs,
        { run_id: runId, kind: 'resume' },
        {
          jobId: `approval-timeout-${approval.request_id}`,
          delayMs: Math.max(1, Date.parse(approval.expires_at) - now + 50),
        },
      ),
    ),
  ]);
}

/** Hosts a prepared run in this process: its events to the run log, its suspension rules. */
export function hostRun(
  deps: RunJobsDeps,
  prepared: PreparedRun,
  options: { abortWhenAbandoned: boolean; withFinalEvent?: () => void },
): HostedRun {
  const { engines, logger, settings } = deps;
  const log = { runId: prepared.runId, sessionId: prepared.sessionId };
  return new HostedRun({
    prepared,
    runLog: engines.runLog,
    graceMs: settings.disconnectGraceMs,
    ...(settings.suspendAfterMs !== undefined ? { suspendAfterMs: settings.suspendAfterMs } : {}),
    abortWhenAbandoned: options.abortWhenAbandoned,
    ...(options.withFinalEvent ? { withFinalEvent: options.withFinalEvent } : {}),
    remoteAttached: async (runId) => (await engines.ephemeral.get(remoteAttachKey(runId))) !== null,
    onSuspended: (approvals) => scheduleResumes(engines.jobs, prepared.runId, approvals),
    onError: (err) => logger.error({ ...log, err }, 'run crashed'),
    onLogError: (err) =>
      logger.warn({ ...log, err }, 'run log append failed; this run cannot be resumed elsewhere'),
  });
}

/** How long a job a draining process received waits before it is offered again. */
const FORWARD_DELAY_MS = 500;

/**
 * Processes {@link AGENT_RUNS_QUEUE} in this process (the worker role; the all-in-one on its
 * in-process queue): each job continues one run here until it ends, suspends or is handed over,
 * holding the run's slot meanwhile. Cancels on the bus reach the runs hosted here.
 */
export async function processAgentRuns(
  deps: RunJobsDeps,
  concurrency: number,
): Promise<AgentRunsHost> {
  const { engines, runner, logger } = deps;
  const runs = new Map<string, HostedRun>();
  let draining = false;
  /** How the drain lets go of a run still going (one waiting for approvals suspends). */
  const letGo = (run: HostedRun) => {
    if (run.suspendIfWaiting()) return;
    if (deps.settings.handOverOnDrain) run.handOver();
    else run.abort(new AgentRunError('server_shutdown'));
  };
  const approvals = new ApprovalStore(engines.ephemeral);
  // Cancels on the bus reach the runs hosted here through it.
  const stopper = new RunStopper(
    engines.bus,
    runs,
    new ConversationRepository(engines.db),
    engines.runLog,
    logger,
    runner.runs,
    engines.ephemeral,
  );

  /** Whether every call a suspended run holds has an outcome; writes `timed_out` when due. */
  const decided = async (held: readonly { request_id: string }[]): Promise<boolean> => {
    for (const { request_id } of held) {
      if (await approvals.resolution(request_id)) continue;
      const record = await approvals.get(request_id);
      if (!record) continue; // gone: the resume refuses the call
      if (Date.now() < record.expiresAt) return false;
      await approvals.resolve(record, { outcome: 'timed_out' });
    }
    return true;
  };

  const prepare = async (job: AgentRunJob): Promise<PreparedRun | null> => {
    if (job.kind === 'resume') {
      const stored = await runner.runs.load(job.run_id);
      if (stored?.status !== 'suspended' || !stored.state?.pendingTurn) return null;
      if (!(await decided(Object.values(stored.state.pendingTurn.approvals)))) return null;
      if (!(await runner.runs.resume(job.run_id))) return null;
      return runner.adopt(job.run_id, { exclusive: false });
    }
    // A start whose run was taken over already (its lease expired before the job ran) is done.
    if (job.kind === 'start' && (await engines.runLog.info(job.run_id))) return null;
    return runner.adopt(job.run_id, {
      // A takeover only once the dead holder's lease expired; a start adopts the handed-over one.
      exclusive: job.kind === 'takeover',
      state: (stored) => takeoverState(engines, stored),
    });
  };

  await engines.jobs.process(
    AGENT_RUNS_QUEUE,
    async (data, context) => {
      const parsed = AgentRunJob.safeParse(data);
      if (!parsed.success) {
        logger.warn({ jobId: context.jobId }, 'agent run job of an unknown shape skipped');
        return;
      }
      const job = parsed.data;
      if (draining) {
        // Only if pausing the consumer failed: left for another worker (or this process's
        // successor, through the takeover check).
        await enqueueRunJob(engines.jobs, job, {
          jobId: `${job.kind}-${job.run_id}-forwarded-${Date.now()}`,
          delayMs: FORWARD_DELAY_MS,
        });
        return { forwarded: true };
      }
      const prepared = await prepare(job);
      if (!prepared) return { skipped: true };
      logger.info({ runId: job.run_id, kind: job.kind }, 'run continues on this process');
      let slot: RunSlot | undefined;
      let run: HostedRun | undefined;
      // Past the drain (its stores may be closing; a handed-over run is then found by the
      // takeover check).
      const onShutdown = () => run && letGo(run);
      context.signal.addEventListener('abort', onShutdown, { once: true });
      try {
        slot = await deps.runSlot?.(prepared.userId, prepared.runId);
        const held = slot;
        run = hostRun(deps, prepared, {
          abortWhenAbandoned: false,
          // Freed with the last event's append (one round trip); `finally` covers the rest.
          withFinalEvent: () => void held?.release(),
        });
        runs.set(run.runId, run);
        const result = await run.finished;
        if (result?.status === 'handed_over') {
          // The process that continues the run takes the slot again; nothing frees it here.
          slot?.leave();
          slot = undefined;
          await enqueueRunJob(
            engines.jobs,
            { run_id: job.run_id, kind: 'takeover' },
            { jobId: `takeover-${job.run_id}-handed-over-${Date.now()}` },
          ).catch((err: unknown) =>
            logger.warn({ runId: job.run_id, err }, 'handed-over run left to the takeover check'),
          );
        }
        return { status: result?.status ?? 'error' };
      } finally {
        context.signal.removeEventListener('abort', onShutdown);
        if (run) runs.delete(run.runId);
        // Whatever ended it here (hosting it failed included): its slot is free again.
        await slot?.release();
      }
    },
    { concurrency },
  );

  const drain = async (drainMs: number) => {
    draining = true;
    // Jobs not taken yet wait for another worker instead of reaching this one (no job reaches
    // the handler once this was called).
    await engines.jobs
      .pause(AGENT_RUNS_QUEUE)
      .catch((err: unknown) => logger.warn({ err }, 'shutdown: could not pause the agent runs'));
    const hosted = () => [...runs.values()];
    for (const run of hosted()) run.suspendIfWaiting();
    if (runs.size === 0) return;
    logger.info({ runs: runs.size, drainMs }, 'shutdown: letting background runs finish');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(hosted().map((run) => run.finished)),
      new Promise((resolve) => (timer = setTimeout(resolve, drainMs))),
    ]);
    clearTimeout(timer);
    const going = hosted();
    if (going.length > 0) logger.info({ runs: going.length }, 'shutdown: letting go of runs');
    for (const run of going) letGo(run);
    await Promise.all(going.map((run) => run.finished));
  };
  return { runs, drain, stopper, close: () => stopper.close() };
}

import { z } from 'zod';
import { AgentRunError, type AgentRunner, type PreparedRun } from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import { ApprovalStore } from '@agent-backend/hitl';
import type { Logger } from '@agent-backend/logger';
import type { SuspendedApproval } from '@agent-backend/protocol';
import { HostedRun, remoteAttachKey } from './hosted-run.js';
import { takeoverState } from './takeover-state.js';

/** The queue of runs the worker role executes: background runs, resumes, takeovers. */
export const AGENT_RUNS_QUEUE = 'agent-runs';

/** The bus channel a cancel goes out on: every process hosting runs stops it if it runs there. */
export const RUN_CANCEL_CHANNEL = 'agent:run-cancel';

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
}

export interface RunJobsDeps {
  readonly engines: Pick<Engines, 'jobs' | 'runLog' | 'ephemeral' | 'bus'>;
  readonly runner: AgentRunner;
  readonly logger: Logger;
  readonly settings: RunHostSettings;
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
  options: { abortWhenAbandoned: boolean },
): HostedRun {
  const { engines, logger, settings } = deps;
  const log = { runId: prepared.runId, sessionId: prepared.sessionId };
  return new HostedRun({
    prepared,
    runLog: engines.runLog,
    graceMs: settings.disconnectGraceMs,
    ...(settings.suspendAfterMs !== undefined ? { suspendAfterMs: settings.suspendAfterMs } : {}),
    abortWhenAbandoned: options.abortWhenAbandoned,
    remoteAttached: async (runId) => (await engines.ephemeral.get(remoteAttachKey(runId))) !== null,
    onSuspended: (approvals) => scheduleResumes(engines.jobs, prepared.runId, approvals),
    onError: (err) => logger.error({ ...log, err }, 'run crashed'),
    onLogError: (err) =>
      logger.warn({ ...log, err }, 'run log append failed; this run cannot be resumed elsewhere'),
  });
}

/**
 * Processes {@link AGENT_RUNS_QUEUE} in this process (the worker role; the all-in-one on its
 * in-process queue): each job continues one run here until it ends or suspends. Cancels on the
 * bus reach the runs hosted here. Returns the runs being hosted (a drain suspends them) and a
 * `close` that stops listening for cancels.
 */
export async function processAgentRuns(
  deps: RunJobsDeps,
  concurrency: number,
): Promise<{ runs: ReadonlyMap<string, HostedRun>; close(): Promise<void> }> {
  const { engines, runner, logger } = deps;
  const runs = new Map<string, HostedRun>();
  const approvals = new ApprovalStore(engines.ephemeral);
  const subscription = await engines.bus.subscribe(RUN_CANCEL_CHANNEL, (message) => {
    const runId = (message as { run_id?: unknown } | null)?.run_id;
    const run = typeof runId === 'string' ? runs.get(runId) : undefined;
    run?.abort(new AgentRunError('run_aborted', 'the run was cancelled by a client'));
  });

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
      const prepared = await prepare(job);
      if (!prepared) return { skipped: true };
      logger.info({ runId: job.run_id, kind: job.kind }, 'run continues on this process');
      const run = hostRun(deps, prepared, { abortWhenAbandoned: false });
      runs.set(run.runId, run);
      const onShutdown = () => {
        if (!run.suspendIfWaiting()) run.abort(new AgentRunError('server_shutdown'));
      };
      context.signal.addEventListener('abort', onShutdown, { once: true });
      try {
        const result = await run.finished;
        return { status: result?.status ?? 'error' };
      } finally {
        context.signal.removeEventListener('abort', onShutdown);
        runs.delete(run.runId);
      }
    },
    { concurrency },
  );
  return { runs, close: () => subscription.unsubscribe() };
}

import { setTimeout as sleep } from 'node:timers/promises';
import {
  AgentRunError,
  releaseSessionLease,
  userLeaseHolders,
  type RunRepository,
  type ConversationRepository,
} from '@agent-backend/agent-runtime';
import type { Engines } from '@agent-backend/engines';
import type { Logger } from '@agent-backend/logger';
import type { RunLog } from '@agent-backend/run-log';
import type { HostedRun } from './hosted-run.js';
import { unstoredRun } from './unstored-run.js';
/** The bus channel a cancel goes out on: every process hosting runs stops it if it runs there. */
export const RUN_CANCEL_CHANNEL = 'agent:run-cancel';

type Bus = Engines['bus'];
type Subscription = Awaited<ReturnType<Bus['subscribe']>>;

/** How long a cancel waits for the run to end before it answers. */
const STOP_WAIT_MS = 5_000;
const STOP_POLL_MS = 50;

/**
 * Cancels a run wherever it runs. The replica that runs it aborts it as a dropped client's grace
 * timeout does (`run_aborted`): the model request and the tools stop, the stream ends with the
 * `error` event, the conversation so far stays stored. `runs` are the runs this process hosts;
 * the others are reached through {@link RUN_CANCEL_CHANNEL}, which every process hosting runs
 * listens to through its one stopper (the api's, the worker's run jobs').
 */
export class RunStopper {
  private readonly subscription: Promise<Subscription>;

  constructor(
    private readonly bus: Bus,
    private readonly runs: ReadonlyMap<string, HostedRun>,
    private readonly conversations: ConversationRepository,
    private readonly runLog: RunLog,
    logger: Logger,
    private readonly stored: RunRepository,
    private readonly ephemeral: Engines['ephemeral'],
  ) {
    this.subscription = bus.subscribe(RUN_CANCEL_CHANNEL, (message) => {
      const runId = (message as { run_id?: unknown } | null)?.run_id;
      if (typeof runId === 'string') this.abortLocal(runId);
    });
    this.subscription.catch((err: unknown) =>
      logger.error({ err }, 'cannot listen for run cancels; cancel works on this replica only'),
    );
  }

  /** Stops the run here when it runs here, else asks the other replicas through the bus. */
  async cancel(runId: string): Promise<void> {
    if (this.abortLocal(runId)) return;
    await this.subscription;
    await this.bus.publish(RUN_CANCEL_CHANNEL, { run_id: runId });
  }

  /**
   * Cancels the user's run and waits until it is recorded as ended and its last event is in the
   * run log (its lease freed before that), at most `timeoutMs`: the run as it is then, null when
   * it is not the user's. A run still `running` then is recorded as ended here (`aborted`,
   * `run_aborted`): no process ran it (a background run whose start job is still queued, a run
   * whose replica died) or its process did not stop in time, and no worker may start or take it
   * over later (they continue only a run still `running`). A run whose rows are not stored yet
   * is cancelled too when its run log and session lease name it as this user's; null when its
   * rows do not appear within `timeoutMs` (its write failed).
   */
  async stop(userId: string, runId: string, timeoutMs = STOP_WAIT_MS) {
    let run = await this.conversations.run(userId, runId);
    const deadline = Date.now() + timeoutMs;
    if (!run) {
      // An invoked run streams while its rows are written: its run log and its session's lease
      // (under this user's id) name it meanwhile. Stopped, it records its end once they are.
      const deps = { runLog: this.runLog, ephemeral: this.ephemeral };
      if (!(await unstoredRun(deps, userId, runId))) return null;
      await this.cancel(runId);
      while (!run && Date.now() < deadline) {
        await sleep(STOP_POLL_MS);
        run = await this.conversations.run(userId, runId);
      }
      if (!run) return null;
    }
    if (run?.status === 'suspended') {
      // Nobody holds it: it ends here, unless a decision resumed it meanwhile.
      const owner = await this.stored.cancelSuspended(runId);
      if (owner) await releaseSessionLease(this.ephemeral, owner.userId, owner.sessionId, runId);
      run = await this.conversations.run(userId, runId);
    }
    if (!run || run.status !== 'running') return run;
    await this.cancel(runId);
    while (run?.status === 'running' && Date.now() < deadline) {
      await sleep(STOP_POLL_MS);
      run = await this.conversations.run(userId, runId);
    }
    if (run?.status === 'running') {
      if (await this.stored.abandon(runId)) {
        // A worker that adopted it since the first cancel was sent is reached by this one.
        await this.cancel(runId);
      }
      return this.conversations.run(userId, runId);
    }
    // The run is recorded as ended before its last event is sent and logged.
    while (Date.now() < deadline) {
      const logged = await this.runLog.info(runId).catch(() => null);
      if (!logged || logged.final) break;
      await sleep(STOP_POLL_MS);
    }
    return run;
  }

  /**
   * Stops every run of the user that is running or suspended, wherever it runs, each as
   * {@link stop} does (they end together, each waited for at most `timeoutMs`): what an erasure
   * does before it removes anything, so no run of the user writes after it.
   * @returns how many runs were stopped.
   */
  async stopUser(userId: string, timeoutMs = STOP_WAIT_MS): Promise<number> {
    // An invoked run streams while its rows are written: only its session lease names it then.
    const [stored, leased] = await Promise.all([
      this.stored.unfinished(userId),
      userLeaseHolders(this.ephemeral, userId),
    ]);
    const runIds = [...new Set([...stored, ...leased])];
    await Promise.all(runIds.map((runId) => this.stop(userId, runId, timeoutMs)));
    return runIds.length;
  }

  async close(): Promise<void> {
    await (await this.subscription.catch(() => undefined))?.unsubscribe();
  }

  private abortLocal(runId: string): boolean {
    const run = this.runs.get(runId);
    if (!run) return false;
    run.abort(new AgentRunError('run_aborted', 'the run was cancelled by a client'));
    return true;
  }
}

import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Logger } from '@agent-backend/logger';
import { userWebChannel } from '@agent-backend/node-rpc';
import type { TaskCompleteMessage, WorkflowCompleteMessage } from '@agent-backend/protocol';

interface WorkflowRecord {
  userId: string;
  workflowId: string;
}

/**
 * Workflow runs between `execute_workflow` and the extension's `task_complete`, shared by every
 * replica through the ephemeral store (key `workflow:<task_id>`). Whoever takes the record first
 * ends the run: the `task_complete` on the extension's replica, or the timeout timer on the
 * replica that started it, which then tells the user's web clients the run timed out. So a
 * run ends exactly once, and every web connection of the user hears about it.
 */
export class WorkflowTracker {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly deps: {
      bus: Bus;
      ephemeral: EphemeralStore;
      logger: Logger;
      timeoutMs: number;
    },
  ) {}

  async start(run: { taskId: string; userId: string; workflowId: string }): Promise<void> {
    const record: WorkflowRecord = { userId: run.userId, workflowId: run.workflowId };
    // The TTL only bounds memory if every replica involved dies; the timer ends the run first.
    await this.deps.ephemeral.set(this.key(run.taskId), JSON.stringify(record), {
      ttlMs: this.deps.timeoutMs + 60_000,
    });
    const timer = setTimeout(() => {
      this.timers.delete(run.taskId);
      void this.fail(
        run.userId,
        run.taskId,
        `Workflow timed out after ${this.deps.timeoutMs / 1000} s`,
      );
    }, this.deps.timeoutMs);
    timer.unref();
    this.timers.set(run.taskId, timer);
  }

  /**
   * The extension finished a run: announce it to the user's web clients (once).
   *
   * @returns `'forbidden'` when the task id is another user's run: nothing is relayed and the
   * run (its record and its timeout) is left to its owner.
   */
  async complete(userId: string, message: TaskCompleteMessage): Promise<'relayed' | 'forbidden'> {
    const key = this.key(message.task_id);
    // Ownership first: taking the record (or stopping the timer) for a task id that another
    // user's node sent would end the owner's run without a word to its web clients.
    const seen = await this.deps.ephemeral.get(key);
    if (seen && (JSON.parse(seen) as WorkflowRecord).userId !== userId) {
      this.deps.logger.warn({ task: message.task_id }, 'task_complete from another user refused');
      return 'forbidden';
    }
    // A run is recorded for its owner only (the task id is server-made and never reused), so a
    // record taken now is the one just read, or none when the timer ended the run meanwhile.
    await this.deps.ephemeral.take(key);
    this.clearTimer(message.task_id);
    // An unknown task id (an extension that does not echo ours, or a run already timed out)
    // is still relayed: the spec relays every task_complete to the user's web clients.
    await this.announce(userId, {
      type: 'workflow_complete',
      task_id: message.task_id,
      success: message.success ?? !message.error,
      result: message.result,
      output: message.output,
      ...(message.error ? { error: message.error } : {}),
    });
    return 'relayed';
  }

  /** Ends a run as failed (no extension, timeout), if it has not ended yet. */
  async fail(userId: string, taskId: string, error: string): Promise<void> {
    this.clearTimer(taskId);
    if (!(await this.deps.ephemeral.take(this.key(taskId)))) return;
    await this.announce(userId, {
      type: 'workflow_complete',
      task_id: taskId,
      success: false,
      result: {},
      output: '',
      error,
    });
  }

  close(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private async announce(userId: string, message: WorkflowCompleteMessage): Promise<void> {
    await this.deps.bus.publish(userWebChannel(userId), message);
  }

  private clearTimer(taskId: string): void {
    const timer = this.timers.get(taskId);
    if (timer) clearTimeout(timer);
    this.timers.delete(taskId);
  }

  private key(taskId: string): string {
    return `workflow:${taskId}`;
  }
}

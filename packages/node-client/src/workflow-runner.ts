import {
  fieldErrors,
  TaskCompleteMessage,
  WorkflowsListMessage,
  type ExecuteWorkflowMessage,
  type TaskCompleteMessageInput,
} from '@agent-backend/protocol';
import { ClientError } from './errors.js';
import { messageOf } from './reconnecting-socket.js';
import { TaskTimeoutError, type TaskSet } from './task-set.js';

/** What a workflow run reports back; becomes `task_complete` and then `workflow_complete`. */
export interface WorkflowOutcome {
  /** @default {} */
  result?: Record<string, unknown>;
  /** @default '' */
  output?: string;
  /** `false` reports a failed run. @default true */
  success?: boolean;
  /** Why the run failed. */
  error?: string;
}

/** The browser extension's workflows (spec 3.2). Only extensions receive workflow messages. */
export interface WorkflowProvider {
  /** The workflows to list; each an object, sent to the web client as is. */
  list(): Promise<Record<string, unknown>[]> | Record<string, unknown>[];
  /** Runs one; a throw reports a failed run with the error's message. */
  execute(
    workflowId: string,
    variables: Record<string, unknown>,
    context: { readonly taskId: string; readonly signal: AbortSignal },
  ): Promise<WorkflowOutcome> | WorkflowOutcome;
}

/** Reported through the client's `workflowRun` / `workflowDone` events. */
export interface WorkflowRunEvent {
  readonly taskId: string;
  readonly workflowId: string;
  readonly variables: Record<string, unknown>;
}
export interface WorkflowDoneEvent {
  readonly taskId: string;
  readonly workflowId: string;
  readonly success: boolean;
  readonly error?: string;
}

export interface WorkflowRunnerDeps {
  readonly provider: WorkflowProvider | undefined;
  readonly tasks: TaskSet;
  readonly timeoutMs: number;
  send(message: WorkflowsListMessage | TaskCompleteMessageInput): boolean;
  onRun(event: WorkflowRunEvent): void;
  onDone(event: WorkflowDoneEvent): void;
  onError(error: ClientError): void;
}

/**
 * Answers the relayed `get_workflows` with `workflows_list`, and runs `execute_workflow`,
 * reporting `task_complete` when the run ends. A node without a provider lists no workflows and
 * fails runs at once, so the web client gets an answer instead of waiting for a timeout. Runs
 * count as tasks (they occupy the node like tool calls do) and end at `timeoutMs`.
 */
export class WorkflowRunner {
  constructor(private readonly deps: WorkflowRunnerDeps) {}

  async list(): Promise<void> {
    let message: WorkflowsListMessage;
    try {
      const workflows = (await this.deps.provider?.list()) ?? [];
      const parsed = WorkflowsListMessage.safeParse({
        type: 'workflows_list',
        success: true,
        workflows,
      });
      if (!parsed.success) {
        const problems = fieldErrors(parsed.error).map((e) => `${e.path} ${e.message}`);
        throw new Error(`the workflow list is invalid: ${problems.join('; ')}`);
      }
      message = parsed.data;
    } catch (error) {
      this.deps.onError(
        new ClientError('invalid_argument', `listing workflows failed: ${messageOf(error)}`),
      );
      message = { type: 'workflows_list', success: false, error: messageOf(error) };
    }
    this.deps.send(message);
  }

  async execute(request: ExecuteWorkflowMessage): Promise<void> {
    const { workflow_id: workflowId, variables, task_id: taskId } = request;
    if (taskId === undefined) {
      this.deps.onError(
        new ClientError(
          'protocol_error',
          `execute_workflow ${workflowId} came without task_id; not run`,
        ),
      );
      return;
    }
    const { provider, tasks } = this.deps;
    const refuse = (error: string) =>
      this.#complete({ taskId, workflowId, success: false, error }, {});
    if (!provider) return refuse('This node has no workflows');
    if (tasks.has(taskId)) return refuse(`Task ${taskId} is already running`);
    if (tasks.full) return refuse(`Node busy: ${tasks.size} of ${tasks.capacity} tasks running`);

    const slot = tasks.add(taskId, this.deps.timeoutMs);
    this.deps.onRun({ taskId, workflowId, variables });
    const aborted = new Promise<never>((_, reject) => {
      slot.signal.addEventListener('abort', () => reject(slot.signal.reason as Error), {
        once: true,
      });
    });
    aborted.catch(() => {});
    let outcome: WorkflowOutcome;
    try {
      outcome = await Promise.race([
        Promise.resolve(provider.execute(workflowId, variables, { taskId, signal: slot.signal })),
        aborted,
      ]);
    } catch (error) {
      outcome = {
        success: false,
        error: error instanceof TaskTimeoutError ? `Workflow ${error.message}` : messageOf(error),
      };
    }
    const lost = slot.signal.aborted && !(slot.signal.reason instanceof TaskTimeoutError);
    slot.finish();
    if (lost) return;
    const success = outcome.success ?? true;
    const done: WorkflowDoneEvent =
      outcome.error === undefined
        ? { taskId, workflowId, success }
        : { taskId, workflowId, success, error: outcome.error };
    this.#complete(done, outcome);
  }

  #complete(done: WorkflowDoneEvent, outcome: WorkflowOutcome): void {
    const parsed = TaskCompleteMessage.safeParse({
      type: 'task_complete',
      task_id: done.taskId,
      result: outcome.result ?? {},
      output: outcome.output ?? '',
      success: done.success,
      ...(done.error === undefined ? {} : { error: done.error }),
    });
    if (parsed.success) {
      this.deps.send(parsed.data);
      this.deps.onDone(done);
      return;
    }
    const error = `Workflow ${done.workflowId} returned an invalid outcome: ${fieldErrors(
      parsed.error,
    )
      .map((e) => `${e.path} ${e.message}`)
      .join('; ')}`;
    this.deps.send({
      type: 'task_complete',
      task_id: done.taskId,
      result: {},
      output: '',
      success: false,
      error,
    });
    this.deps.onDone({ ...done, success: false, error });
  }
}

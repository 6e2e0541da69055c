/** One running task: its abort signal, and `finish()` to free its slot. */
export interface TaskSlot {
  readonly signal: AbortSignal;
  /** Frees the slot and stops its timer. Idempotent. */
  finish(): void;
}

/**
 * The tasks a node is running (tool calls and workflow runs), which it reports as
 * `current_tasks` and, at `max_concurrent_tasks`, as status `busy`. Each task has a deadline
 * after which its signal aborts with a `timeout` reason; `abortAll` aborts the rest when the
 * connection drops or the client closes.
 */
export class TaskSet {
  readonly #tasks = new Map<string, { controller: AbortController; finish(): void }>();

  constructor(
    readonly capacity: number,
    /** Called after every change of {@link size}. */
    private readonly onChange: () => void,
  ) {}

  get size(): number {
    return this.#tasks.size;
  }

  get full(): boolean {
    return this.#tasks.size >= this.capacity;
  }

  has(key: string): boolean {
    return this.#tasks.has(key);
  }

  /** Takes a slot; the caller checks `full` and `has(key)` first. */
  add(key: string, timeoutMs: number): TaskSlot {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TaskTimeoutError(timeoutMs)), timeoutMs);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.#tasks.delete(key);
      this.onChange();
    };
    this.#tasks.set(key, { controller, finish });
    this.onChange();
    return { signal: controller.signal, finish };
  }

  /** Aborts every task with `reason` and frees all slots. */
  abortAll(reason: Error): void {
    for (const { controller, finish } of [...this.#tasks.values()]) {
      controller.abort(reason);
      finish();
    }
  }
}

/** The abort reason of a task that ran past its deadline. */
export class TaskTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms`);
    this.name = 'TaskTimeoutError';
  }
}

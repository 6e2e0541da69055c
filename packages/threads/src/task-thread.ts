import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type TransferListItem, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts a worker thread from a module compiled next to the caller (`dist/x-worker.js`), or from
 * its TypeScript source (`src/x-worker.ts`) when the package runs unbuilt, as in the tests: then
 * tsx, a development dependency, is registered in the thread first. `builtUrl` names the `.js`
 * file; the source is the same path with `.ts`.
 */
export function spawnModuleWorker(builtUrl: URL, options: WorkerOptions = {}): Worker {
  if (existsSync(fileURLToPath(builtUrl))) return new Worker(builtUrl, options);
  const source = new URL(builtUrl.href.replace(/\.js$/, '.ts'));
  const bootstrap =
    `import('tsx/esm/api').then((tsx) => { tsx.register(); ` +
    `return import(${JSON.stringify(source.href)}); });`;
  return new Worker(bootstrap, { ...options, eval: true });
}

/** What a task worker posts back: the answer to the request of the same id. */
export interface TaskAnswer {
  readonly id: number;
}

/**
 * How long a task thread waits without a task before it stops. Starting one again costs tens of
 * milliseconds (an isolate and its module); an idle one holds its own V8 heap, several MB.
 */
export const TASK_THREAD_IDLE_MS = 60_000;

/**
 * One worker thread that runs tasks one after the other: started on first use, kept while it has
 * work and let go of (unref) while idle, so an idle thread never keeps the process alive, and
 * stopped after `idleMs` without a task (the next task starts it again), so a process that
 * parsed one large body or split one document does not keep the thread's memory for good. A
 * worker that dies fails its pending tasks; the next task starts a new one. The worker receives
 * `{ id, ...request }` and must post back one `{ id, ... }` per request.
 */
export class TaskThread<Request extends object, Answer extends TaskAnswer> {
  private worker: Worker | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve(answer: Answer): void; reject(error: Error): void }
  >();

  constructor(
    private readonly builtUrl: URL,
    private readonly name: string,
    private readonly idleMs = TASK_THREAD_IDLE_MS,
  ) {}

  /** Whether the thread is running (started and not stopped since). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  run(request: Request, transfer?: readonly TransferListItem[]): Promise<Answer> {
    const worker = this.start();
    clearTimeout(this.idleTimer);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...request, id }, transfer);
    });
  }

  /** Stops the thread; pending tasks fail. */
  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  /** Stops an idle thread without failing anything: its exit is no longer this one's concern. */
  private stopIdle(worker: Worker): void {
    if (this.worker !== worker || this.pending.size > 0) return;
    this.worker = undefined;
    worker.removeAllListeners('exit');
    worker.removeAllListeners('error');
    worker.on('error', () => undefined);
    void worker.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnModuleWorker(this.builtUrl);
    worker.on('message', (answer: Answer) => {
      const pending = this.pending.get(answer.id);
      if (!pending) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0) {
        worker.unref();
        clearTimeout(this.idleTimer);
        this.idleTimer = setTimeout(() => this.stopIdle(worker), this.idleMs);
        this.idleTimer.unref();
      }
      pending.resolve(answer);
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the ${this.name} thread exited with ${code}`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

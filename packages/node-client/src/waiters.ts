import { ClientError } from './errors.js';

interface Waiter<T> {
  readonly match: (value: T) => boolean;
  readonly resolve: (value: T) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

/**
 * Callers waiting for an answer frame, served first come first served among those whose
 * `match` accepts the frame. The protocol has no request ids outside JSON-RPC, so answers are
 * paired by type (and `workflow_id` / `task_id` where they carry one). Every wait has a
 * deadline, and `rejectAll` settles everything when the socket drops or the client closes, so
 * no caller hangs and no timer outlives the client.
 */
export class Waiters<T> {
  #waiters: Waiter<T>[] = [];

  get size(): number {
    return this.#waiters.length;
  }

  wait(timeoutMs: number, what: string, match: (value: T) => boolean = () => true): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        match,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#remove(waiter);
          reject(new ClientError('timeout', `no ${what} within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  /** Hands `value` to the oldest matching waiter; false when nobody wanted it. */
  deliver(value: T): boolean {
    const waiter = this.#waiters.find((w) => w.match(value));
    if (!waiter) return false;
    this.#remove(waiter);
    waiter.resolve(value);
    return true;
  }

  rejectAll(error: Error): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  #remove(waiter: Waiter<T>): void {
    clearTimeout(waiter.timer);
    this.#waiters = this.#waiters.filter((w) => w !== waiter);
  }
}

/**
 * A promise with its settle functions, for `start()`. Its rejection is marked handled, so a
 * caller that does not await `start()` gets a `stopped` event instead of a process crash.
 */
export function deferred(): {
  promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
} {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** Gives back what {@link Semaphore.acquire} took; calling it more than once does nothing. */
export type Release = () => void;

/**
 * A counting semaphore with weights, first come first served: a waiter is admitted only when it
 * is at the head of the queue and enough permits are free, so a heavy waiter (a tool that must
 * run alone takes every permit) is not starved by lighter ones arriving after it.
 *
 * In the contract: `acquire` resolves with `null`, holding nothing, when `signal` aborts before
 * the permits were granted (also when it was aborted already); a weight above the capacity is
 * treated as the whole capacity.
 */
export class Semaphore {
  private free: number;
  private readonly queue: Array<{ weight: number; grant: () => void }> = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`a semaphore needs a positive integer capacity, got ${capacity}`);
    }
    this.free = capacity;
  }

  /** Permits currently held. */
  get held(): number {
    return this.capacity - this.free;
  }

  acquire(signal: AbortSignal, weight = 1): Promise<Release | null> {
    const need = Math.min(Math.max(1, weight), this.capacity);
    if (signal.aborted) return Promise.resolve(null);
    if (this.queue.length === 0 && this.free >= need) {
      this.free -= need;
      return Promise.resolve(this.releaser(need));
    }
    return new Promise((resolve) => {
      const waiter = {
        weight: need,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.releaser(need));
        },
      };
      const onAbort = () => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        resolve(null);
        // The head may have been the one blocking the others.
        this.drain();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private releaser(weight: number): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.free += weight;
      this.drain();
    };
  }

  private drain(): void {
    while (this.queue.length > 0 && this.free >= this.queue[0]!.weight) {
      const next = this.queue.shift()!;
      this.free -= next.weight;
      next.grant();
    }
  }
}

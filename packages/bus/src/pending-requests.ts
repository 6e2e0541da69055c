import { BusTimeoutError } from './errors.js';

interface Pending {
  readonly channel: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  readonly release: () => void;
}

/**
 * Requests waiting for their reply. Each settles exactly once, by whichever comes first: the
 * reply, the deadline, the abort signal, a send failure or the bus closing; later outcomes
 * (a reply after the deadline, a second responder) are ignored.
 */
export class PendingRequests {
  private readonly waiting = new Map<string, Pending>();
  private nextId = 0;

  /** Registers a request, starting its deadline; `id` correlates the reply. */
  open(
    channel: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): { id: string; result: Promise<unknown> } {
    const id = (this.nextId++).toString(36);
    const result = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(
        () => this.reject(id, new BusTimeoutError(channel, timeoutMs)),
        timeoutMs,
      );
      const onAbort = () => this.reject(id, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const release = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      this.waiting.set(id, { channel, resolve, reject, release });
    });
    return { id, result };
  }

  /** The channel of a request still waiting, or undefined when it already settled. */
  channelOf(id: string): string | undefined {
    return this.waiting.get(id)?.channel;
  }

  /** The ids of the requests still waiting, by channel. */
  idsByChannel(): Map<string, string[]> {
    const byChannel = new Map<string, string[]>();
    for (const [id, { channel }] of this.waiting) {
      const ids = byChannel.get(channel);
      if (ids) ids.push(id);
      else byChannel.set(channel, [id]);
    }
    return byChannel;
  }

  resolve(id: string, value: unknown): void {
    this.take(id)?.resolve(value);
  }

  reject(id: string, reason: unknown): void {
    this.take(id)?.reject(reason);
  }

  rejectAll(reason: () => unknown): void {
    for (const id of [...this.waiting.keys()]) this.reject(id, reason());
  }

  private take(id: string): Pending | undefined {
    const pending = this.waiting.get(id);
    if (!pending) return undefined;
    this.waiting.delete(id);
    pending.release();
    return pending;
  }
}

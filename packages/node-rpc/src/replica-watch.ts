import type { Presence } from '@agent-backend/presence';

interface Watched {
  readonly replicaId: string;
  /** When the call started: only a read that began later may fail it. */
  readonly since: number;
  /** Called once when presence no longer lists the replica alive. */
  readonly onGone: () => void;
}

/**
 * The calls in flight of one caller, each with the gateway replica holding its node. While any
 * call is in flight, one presence read every `checkMs` (for all of them, not one per call) finds
 * the replicas no longer alive, and their calls are told at once instead of at their deadline.
 * The ticker stops at the first tick with no call in flight, so a caller with one call at a time
 * does not start and stop a timer per call.
 */
export class ReplicaWatch {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly presence: Presence,
    private readonly checkMs: number,
  ) {}

  /** Watches a call's replica until the returned function is called. */
  watch(replicaId: string, onGone: () => void): () => void {
    const entry: Watched = { replicaId, since: Date.now(), onGone };
    this.watched.add(entry);
    if (!this.timer) {
      this.timer = setInterval(() => this.check(), this.checkMs);
      this.timer.unref();
    }
    return () => this.watched.delete(entry);
  }

  /** Calls watched now (tests). */
  get size(): number {
    return this.watched.size;
  }

  private check(): void {
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    // One read at a time: a slow Redis does not pile up reads.
    if (this.checking) return;
    this.checking = true;
    const readAt = Date.now();
    this.presence
      .liveReplicas()
      .then(
        (live) => {
          const alive = new Set(live);
          for (const entry of [...this.watched]) {
            // A call sent after the read began may have been routed on a newer one.
            if (alive.has(entry.replicaId) || entry.since > readAt) continue;
            this.watched.delete(entry);
            entry.onGone();
          }
        },
        () => {},
      )
      .finally(() => {
        this.checking = false;
      });
  }
}

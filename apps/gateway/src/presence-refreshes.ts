/** Something whose presence entry is refreshed when its turn comes (a node connection). */
export interface Refreshable {
  refreshNow(): void;
}

/** Refreshes started per event-loop turn at most; more wait for the next turn. */
const MAX_PER_TURN = 500;

/**
 * The presence refreshes (TTL only, no change) this replica's connections asked for, started
 * together every `flushMs`: heartbeats and pongs arrive one socket read at a time, and a Redis
 * command for each was one write to Redis each (the largest share of an idle gateway's time
 * after the WebSocket writes). Started in the same loop turn, the client's auto-pipelining sends
 * them as one write. At most {@link MAX_PER_TURN} a turn, so a burst (the pongs of a ping pass)
 * does not stall the loop. A refresh that waits here is at most `flushMs` late, far inside the
 * entry's TTL.
 */
export class PresenceRefreshes {
  private due = new Set<Refreshable>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly flushMs: number) {}

  /** Refreshes `conn` with the next batch (once, however often it asks before). */
  add(conn: Refreshable): void {
    if (this.stopped) return;
    this.due.add(conn);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Forgets `conn` (its connection closed). */
  delete(conn: Refreshable): void {
    this.due.delete(conn);
  }

  /** Refreshes waiting now (tests, diagnostics). */
  get size(): number {
    return this.due.size;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  private flush(): void {
    this.timer = undefined;
    let started = 0;
    for (const conn of this.due) {
      if (started++ === MAX_PER_TURN) {
        // The rest in the next turn, after the I/O this one let wait.
        this.timer = setTimeout(() => this.flush(), 0);
        this.timer.unref();
        return;
      }
      this.due.delete(conn);
      conn.refreshNow();
    }
  }
}

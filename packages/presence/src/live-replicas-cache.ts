/**
 * The live replicas a Cluster presence store hands to its per-user scripts (see `args` liveness
 * in `presence-scripts.ts`), so those scripts need not read the replicas' set, which sits in
 * another slot.
 *
 * Staleness, and why it is bounded:
 * - A list is reused for at most {@link LIVE_REPLICAS_MAX_AGE_MS}. A replica that died or was
 *   removed by another store meanwhile keeps its nodes visible that much longer than the set
 *   says (its nodes were visible for up to `replicaTtlMs` after its last beat anyway).
 * - An entry of a replica missing from the list, written at or after `since` (the list's
 *   server time minus `replicaTtlMs`), is not hidden on the list's word alone: the script asks
 *   again, and the store reruns it with a list read after the script ran ({@link refresh}; the
 *   scripts that ask in one turn of the event loop share that read).
 *   A replica that started after the list was read wrote nothing before `since`, so it is seen
 *   at once, even when the user's master's clock is behind the replicas' master's by up to
 *   `replicaTtlMs`. Older entries of a missing replica are hidden without a second read: a
 *   replica dead for longer than the TTL costs nothing extra.
 * - A replica back from a stall past its TTL is seen by another store up to that age late, for
 *   the entries it has not written since its return; its own store sees it at once.
 * - The store's own `heartbeatReplica` and `removeReplica` update the list at once.
 */

/** How long a list of live replicas is reused before it is read again. */
export const LIVE_REPLICAS_MAX_AGE_MS = 250;

/** A list of live replicas as of a server time. */
export interface LiveReplicas {
  /** Entries written at or after this server time by a replica not in `ids` may be of a new one. */
  readonly since: number;
  readonly ids: ReadonlySet<string>;
}

interface Read {
  /** `performance.now()` when the read was sent. */
  readonly sentAt: number;
  readonly result: Promise<LiveReplicas>;
}

export class LiveReplicasCache {
  private last: Read | undefined;
  /** The end of the turn in which a {@link refresh} asked, while one is awaited. */
  private waiting: Promise<void> | undefined;
  /** This store's own beats and removals since the list was sent, by `performance.now()`. */
  private extra = new Map<string, number>();
  private gone = new Map<string, number>();

  /**
   * @param read Reads the live replicas and the server time (ms).
   * @param replicaTtlMs How long a replica lives after its beat; `since` lies that far back.
   */
  constructor(
    private readonly read: () => Promise<{ now: number; ids: string[] }>,
    private readonly replicaTtlMs: number,
  ) {}

  /** The cached list, read again when older than {@link LIVE_REPLICAS_MAX_AGE_MS}. */
  async current(): Promise<LiveReplicas> {
    const last = this.last;
    if (last && performance.now() - last.sentAt < LIVE_REPLICAS_MAX_AGE_MS) {
      return this.adjusted(await last.result);
    }
    return this.readAfter(performance.now());
  }

  /**
   * A list read sent after every caller asked: the read waits for the end of the current turn of
   * the event loop (`setImmediate`), so the scripts that asked again in one turn (after a
   * gateway died, many entries of its replica are recent and every script asks) share one read.
   */
  async refresh(): Promise<LiveReplicas> {
    this.waiting ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.waiting = undefined;
    });
    const after = performance.now();
    await this.waiting;
    return this.readAfter(after);
  }

  /** A list read at or after `after` (`performance.now()`): one read serves concurrent callers. */
  private async readAfter(after: number): Promise<LiveReplicas> {
    const last = this.last;
    if (last && last.sentAt >= after) return this.adjusted(await last.result);
    const sentAt = performance.now();
    const result = this.read().then(({ now, ids }) => ({
      since: now - this.replicaTtlMs,
      ids: new Set(ids),
    }));
    const read = { sentAt, result };
    this.last = read;
    this.extra = new Map();
    this.gone = new Map();
    // A failed read is not reused: the next caller reads again.
    result.catch(() => {
      if (this.last === read) this.last = undefined;
    });
    return this.adjusted(await result);
  }

  /** Takes a list read elsewhere (`liveReplicas()`) as the newest. */
  store(sentAt: number, now: number, ids: string[]): void {
    if (this.last && this.last.sentAt > sentAt) return;
    this.last = {
      sentAt,
      result: Promise.resolve({ since: now - this.replicaTtlMs, ids: new Set(ids) }),
    };
    // Only what the read saw: a beat or removal after it was sent still counts.
    for (const map of [this.extra, this.gone])
      for (const [id, at] of map) if (at < sentAt) map.delete(id);
  }

  /** This store's replica just beat: live whatever the cached list says. */
  beat(replicaId: string): void {
    this.extra.set(replicaId, performance.now());
    this.gone.delete(replicaId);
  }

  /** This store removed the replica: gone whatever the cached list says. */
  removed(replicaId: string): void {
    this.gone.set(replicaId, performance.now());
    this.extra.delete(replicaId);
  }

  private adjusted(list: LiveReplicas): LiveReplicas {
    if (this.extra.size === 0 && this.gone.size === 0) return list;
    const ids = new Set([...list.ids, ...this.extra.keys()]);
    for (const id of this.gone.keys()) ids.delete(id);
    return { since: list.since, ids };
  }
}

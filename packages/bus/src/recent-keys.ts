/**
 * The last `max` keys seen, oldest forgotten first. A request can reach a responder twice: the
 * Redis client re-sends a PUBLISH that was in flight when its connection dropped (ioredis's
 * `autoResendUnfulfilledCommands`), although Redis may have delivered it already. A tool call
 * then ran twice on its node (tests/faults/redis-restart.test.ts, `CLIENT KILL TYPE normal`).
 */
export class RecentKeys {
  private readonly keys = new Set<string>();
  constructor(private readonly max: number) {}
  /** True when `key` was seen before; remembers it otherwise. */
  seen(key: string): boolean {
    if (this.keys.has(key)) return true;
    this.keys.add(key);
    if (this.keys.size > this.max) this.keys.delete(this.keys.values().next().value!);
    return false;
  }
}

/**
 * Replies published without a receiver count, kept for `ttlMs` so that a requester whose inbox
 * resubscribed can ask for them again (see `BaseBus.inboxResubscribed`). At most `maxChars`
 * characters of them: past it the oldest are forgotten early. Expired replies are forgotten at
 * the next `keep` or `get`, and by a timer when no reply follows, so an idle process holds none.
 */
export class KeptReplies {
  /** In the order kept, so the oldest come first. */
  private readonly replies = new Map<string, { readonly payload: string; readonly at: number }>();
  private chars = 0;
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly ttlMs: number,
    private readonly maxChars: number,
  ) {}

  get size(): number {
    return this.replies.size;
  }

  keep(key: string, payload: string): void {
    const now = Date.now();
    this.forget(now - this.ttlMs);
    this.replies.set(key, { payload, at: now });
    this.chars += payload.length;
    while (this.chars > this.maxChars) this.forgetOldest();
    this.sweep ??= setTimeout(() => this.sweepExpired(), this.ttlMs).unref();
  }

  get(key: string): string | undefined {
    this.forget(Date.now() - this.ttlMs);
    return this.replies.get(key)?.payload;
  }

  clear(): void {
    clearTimeout(this.sweep);
    this.sweep = undefined;
    this.replies.clear();
    this.chars = 0;
  }

  private sweepExpired(): void {
    this.sweep = undefined;
    this.forget(Date.now() - this.ttlMs);
    const oldest = this.replies.values().next();
    if (oldest.done) return;
    const wait = Math.max(1, oldest.value.at + this.ttlMs - Date.now());
    this.sweep = setTimeout(() => this.sweepExpired(), wait).unref();
  }

  /** Forgets the replies kept before `before`. */
  private forget(before: number): void {
    for (const reply of this.replies.values()) {
      if (reply.at >= before) return;
      this.forgetOldest();
    }
  }

  private forgetOldest(): void {
    const oldest = this.replies.entries().next();
    if (oldest.done) return;
    this.replies.delete(oldest.value[0]);
    this.chars -= oldest.value[1].payload.length;
  }
}

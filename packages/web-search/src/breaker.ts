/**
 * A circuit breaker per provider, shared by the process: after `failures` consecutive
 * failures the provider is skipped for `cooldownMs`; then one call is let through (half-open):
 * success closes the breaker, failure opens it for another cooldown.
 */
export class CircuitBreaker {
  private consecutive = 0;
  private openUntil = 0;
  private probing = false;

  constructor(
    private readonly failures: number,
    private readonly cooldownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a call may go to the provider now (taking the half-open probe if it is due). */
  allow(): boolean {
    if (this.consecutive < this.failures) return true;
    if (this.now() < this.openUntil || this.probing) return false;
    this.probing = true;
    return true;
  }

  succeeded(): void {
    this.consecutive = 0;
    this.probing = false;
  }

  failed(): void {
    this.consecutive += 1;
    this.probing = false;
    if (this.consecutive >= this.failures) this.openUntil = this.now() + this.cooldownMs;
  }
}

import type { Limits } from './limits.js';

const DAY_MS = 86_400_000;
/** A day's counter outlives its day, so a late run's tokens still land in it. */
const COUNTER_TTL_MS = 2 * DAY_MS;

/** Where a user stands against the daily token budget. */
export interface BudgetStatus {
  /** The UTC day counted (`YYYY-MM-DD`). */
  readonly day: string;
  /** Tokens a day per user. */
  readonly limit: number;
  /** Prompt and completion tokens the provider reported for this user's model requests today. */
  readonly used: number;
  /** `limit - used`, at least 0. */
  readonly remaining: number;
  /** Milliseconds until the day ends and the budget is whole again. */
  readonly resetMs: number;
}

/**
 * Per-user daily budgets of model tokens (`TOKEN_BUDGET_PER_USER_PER_DAY`), counted for the whole
 * deployment in the limits store: one counter per user and UTC day
 * (`tokens:<userId>:<YYYY-MM-DD>`), to which each model request adds the tokens its provider
 * reported. A budget of 0 is off: nothing is read or counted. Store failures reject; the caller
 * applies `LIMITS_ON_REDIS_ERROR`.
 */
export class TokenBudgets {
  constructor(
    private readonly limits: Limits,
    /** Tokens a day per user; 0: off. */
    readonly perDay: number,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.perDay > 0;
  }

  /** Where `userId` stands today (null when budgets are off). */
  async status(userId: string): Promise<BudgetStatus | null> {
    return this.add(userId, 0);
  }

  /** Adds the tokens of one model request; where the user stands afterwards (null when off). */
  async spend(userId: string, tokens: number): Promise<BudgetStatus | null> {
    return this.add(userId, Math.max(0, Math.floor(tokens)));
  }

  private async add(userId: string, tokens: number): Promise<BudgetStatus | null> {
    if (!this.enabled) return null;
    const now = this.now();
    const day = new Date(now).toISOString().slice(0, 10);
    const used = await this.limits.addToCounter(`tokens:${userId}:${day}`, tokens, COUNTER_TTL_MS);
    return {
      day,
      limit: this.perDay,
      used,
      remaining: Math.max(0, this.perDay - used),
      resetMs: DAY_MS - (now % DAY_MS),
    };
  }
}

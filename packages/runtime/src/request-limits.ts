import type { Config } from '@agent-backend/config';
import { limitRules, type RateLimitName } from '@agent-backend/engines';
import { AppError, type RouteHook } from '@agent-backend/http-server';
import { TokenBudgets, type BudgetStatus, type Limits, type RateRule } from '@agent-backend/limits';
import type { Logger } from '@agent-backend/logger';
import type { ServiceMetrics } from '@agent-backend/metrics';
import { runAdmission, type Admitted, type RunAdmission } from './run-admission.js';

/** A route's response, as its hooks see it. */
type Reply = Parameters<RouteHook>[1];

/**
 * The limits as routes use them (docs/limits.md): a rate class as a route's `limit` hook, a
 * user's run and stream slots, the daily token budget. All answer in the service's error shape:
 * over a limit 429 `rate_limited` (`budget_exceeded`) with `Retry-After`; with the limits store
 * down, as `LIMITS_ON_REDIS_ERROR` says (through, or that same 429), never a 5xx.
 */
export interface RequestLimits extends RunAdmission {
  /**
   * The `limit` hook of a route of class `name`: one point per request, keyed by the user (the
   * client address on a route without one). Answers carry `RateLimit-Policy` and `RateLimit`
   * (IETF draft `ratelimit-headers`).
   */
  rate(name: RateLimitName): RouteHook;
  /**
   * The `limit` hook of a route that starts a run: its rate class (as {@link rate}) and the run's
   * admission (as `admitRun`) asked together, in one round trip to the store. The handler takes
   * what was admitted with {@link admitted}; a request that never reaches it (its body refused)
   * gives it back when its response ends.
   */
  rateAndAdmit(name: RateLimitName, newRunId: () => string): RouteHook;
  /**
   * What `rateAndAdmit` took for this response, with the run id its run slot is named after;
   * the caller releases it from now on.
   */
  admitted(reply: Reply): Admitted & { readonly runId: string };
  /**
   * Takes one point of `name` for `key` outside HTTP (a chat message): whether it fitted. With
   * the store down, what `LIMITS_ON_REDIS_ERROR` says (`open`: true).
   */
  allows(name: RateLimitName, key: string): Promise<boolean>;
  /** The daily token budgets (`TOKEN_BUDGET_PER_USER_PER_DAY`), for `GET /api/usage`. */
  readonly budgets: TokenBudgets;
  /** Where the user stands against the budget; null when off or the store cannot say. */
  budgetStatus(userId: string): Promise<BudgetStatus | null>;
  /** Each rate class's rule, as configured (`RATE_LIMIT_*`; 0 points: no limit). */
  readonly rules: Readonly<Record<RateLimitName, RateRule>>;
}

/** `Retry-After` of a refusal while the limits store is down (`LIMITS_ON_REDIS_ERROR=closed`). */
const UNAVAILABLE_RETRY_SECONDS = 5;

export function requestLimits(
  limits: Limits,
  config: Config,
  metrics: ServiceMetrics,
  logger: Logger,
): RequestLimits {
  const rules = limitRules(config);
  const failOpen = config.LIMITS_ON_REDIS_ERROR === 'open';
  /**
   * Fail open: log and let the request through. Fail closed: refuse it as over its limit (429,
   * the answer a client already retries on), never a 5xx of the limits' own.
   */
  const storeDown = (limit: string, error: unknown): AppError | undefined => {
    logger.warn({ err: error, limit, failOpen }, 'limits cannot be checked');
    if (failOpen) return undefined;
    return new AppError(
      'rate_limited',
      'limits cannot be checked right now (Redis is unavailable); retry shortly',
      { limit, reason: 'limits_unavailable', retry_after_seconds: UNAVAILABLE_RETRY_SECONDS },
      { 'Retry-After': String(UNAVAILABLE_RETRY_SECONDS) },
    );
  };
  const budgets = new TokenBudgets(limits, config.TOKEN_BUDGET_PER_USER_PER_DAY);
  const { tryAdmitRun, refuse, ...admission } = runAdmission({
    limits,
    budgets,
    config,
    metrics,
    logger,
    storeDown,
  });
  /** What `rateAndAdmit` took, until the handler claims it or the response ends. */
  const pending = new WeakMap<Reply, Admitted & { readonly runId: string }>();
  const releaseAll = (held: Admitted) => Promise.all([held.run.release(), held.releaseStream()]);

  /** The `limit` hook of rate class `name`. */
  function rate(name: RateLimitName): RouteHook {
    const rule = rules[name];
    const windowSeconds = Math.ceil(rule.windowMs / 1000);
    const policy = `"${name}";q=${rule.points};w=${windowSeconds}`;
    return async (request, reply) => {
      if (rule.points === 0) return;
      const key = request.userId ?? `addr:${request.ip ?? 'unknown'}`;
      let decision;
      try {
        decision = await limits.consume(name, key);
      } catch (error) {
        const refusal = storeDown(name, error);
        if (refusal) refuse({ error: refusal, limit: name });
        return;
      }
      const resetSeconds = Math.ceil(decision.resetMs / 1000);
      reply.setHeader('RateLimit-Policy', policy);
      reply.setHeader('RateLimit', `"${name}";r=${decision.remaining};t=${resetSeconds}`);
      if (decision.allowed) return;
      metrics.limits.refused(name);
      throw new AppError(
        'rate_limited',
        `too many requests of this kind (${name}): at most ${rule.points} in ${windowSeconds} s; retry in ${resetSeconds} s`,
        { limit: name, retry_after_seconds: resetSeconds },
        { 'Retry-After': String(Math.max(1, resetSeconds)) },
      );
    };
  }

  return {
    rules,
    async allows(name, key) {
      if (rules[name].points === 0) return true;
      try {
        const decision = await limits.consume(name, key);
        if (!decision.allowed) metrics.limits.refused(name);
        return decision.allowed;
      } catch (error) {
        logger.warn({ err: error, limit: name, failOpen }, 'limits cannot be checked');
        if (!failOpen) metrics.limits.refused(name);
        return failOpen;
      }
    },

    rate,
    rateAndAdmit(name, newRunId) {
      const checkRate = rate(name);
      return async (request, reply) => {
        const runId = newRunId();
        // One round trip: both go out in the same tick. Only the refusal answered is counted
        // (the rate's, when both refuse).
        const [rated, admitted] = await Promise.allSettled([
          checkRate(request, reply),
          tryAdmitRun(request.userId!, runId),
        ]);
        if (rated.status === 'rejected') {
          if (admitted.status === 'fulfilled' && 'admitted' in admitted.value)
            await releaseAll(admitted.value.admitted);
          throw rated.reason;
        }
        if (admitted.status === 'rejected') throw admitted.reason;
        const decided = admitted.value;
        if (!('admitted' in decided)) return refuse(decided);
        const held = { ...decided.admitted, runId };
        pending.set(reply, held);
        reply.once('close', () => {
          if (pending.delete(reply)) void releaseAll(held);
        });
      };
    },
    admitted(reply) {
      const held = pending.get(reply);
      if (!held) throw new Error('admitted(): the route has no rateAndAdmit hook, or it was taken');
      pending.delete(reply);
      return held;
    },

    ...admission,
    budgets,
    async budgetStatus(userId) {
      try {
        return await budgets.status(userId);
      } catch (error) {
        logger.warn({ err: error, limit: 'token_budget' }, 'limits cannot be checked');
        return null;
      }
    },
  };
}

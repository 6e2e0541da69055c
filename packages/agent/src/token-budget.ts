import type { RunInfo, TurnBudget } from '@agent-backend/agent-runtime';
import { TokenBudgets, type Limits } from '@agent-backend/limits';
import type { Logger } from '@agent-backend/logger';
import type { ServiceMetrics } from '@agent-backend/metrics';

interface RunBudgetDeps {
  readonly limits: Limits;
  /** `TOKEN_BUDGET_PER_USER_PER_DAY`; 0: off. */
  readonly perDay: number;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
}

/**
 * Every run's view of its user's daily token budget (docs/limits.md), for every kind of run
 * (invoke, scheduled tasks, chat replies): checked before the first model request (unless the
 * caller did, `budgetChecked`: invoke's admission), and each
 * request's tokens added to the user's counter of the day: at once after a request that called
 * tools (where the budget stands decides whether the run goes on), with the run's last writes
 * after its final answer. Undefined when budgets are off.
 * A store failure during a run is logged and the run goes on (its tokens uncounted): the
 * request path's check already applied `LIMITS_ON_REDIS_ERROR`, and ending a run half-way on an
 * outage would lose the work for nothing.
 */
export function runTokenBudget(
  deps: RunBudgetDeps,
): ((run: RunInfo) => TurnBudget | undefined) | undefined {
  if (deps.perDay === 0) return undefined;
  const budgets = new TokenBudgets(deps.limits, deps.perDay);
  const { logger, metrics } = deps;
  return (run) => {
    const log = { runId: run.runId, userId: run.userId, limit: 'token_budget' };
    const within = async (tokens: number): Promise<boolean> => {
      let status;
      try {
        status = await budgets.spend(run.userId, tokens);
      } catch (error) {
        logger.warn({ ...log, err: error }, 'limits cannot be checked');
        return true;
      }
      if (!status || status.remaining > 0) return true;
      metrics.limits.refused('token_budget');
      logger.info({ ...log, used: status.used, budget: status.limit }, 'token budget used up');
      return false;
    };
    // The final answer's tokens, until the run's last writes (see TurnBudget.spendAtEnd).
    let atEnd = 0;
    return {
      allows: async () => run.request.budgetChecked === true || within(0),
      spend: within,
      spendAtEnd: (tokens: number) => void (atEnd += tokens),
      settle: async () => {
        if (atEnd === 0) return;
        const tokens = atEnd;
        atEnd = 0;
        await within(tokens);
      },
    };
  };
}

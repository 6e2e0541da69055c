export {
  LimitsClosedError,
  type Limits,
  type RateDecision,
  type RateRule,
  type SlotDecision,
  type SlotPool,
  type SlotLeaseOptions,
} from './limits.js';
export { createMemoryLimits, type MemoryLimitsOptions } from './memory-limits.js';
export { createRedisLimits, type RedisLimitsOptions } from './redis-limits.js';
export { TokenBudgets, type BudgetStatus } from './token-budget.js';

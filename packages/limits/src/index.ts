export {
  LimitsClosedError,
  type Limits,
  type RateDecision,
  type RateRule,
  type SlotDecision,
  type SlotLeaseOptions,
} from './limits.js';
export { createMemoryLimits, type MemoryLimitsOptions } from './memory-limits.js';
export { createRedisLimits, type RedisLimitsOptions } from './redis-limits.js';

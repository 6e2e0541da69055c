import { describeLimitsContract } from './limits.contract.js';
import { createMemoryLimits } from './memory-limits.js';

describeLimitsContract('memory', async (rules, lease) => createMemoryLimits({ rules, ...lease }));

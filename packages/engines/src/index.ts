export { createEngines, type Engines, type CreateEnginesOptions } from './engines.js';
// A start that fails on it says so in one line (packages/runtime), without importing the store.
export { DataDirInUseError } from '@agent-backend/store';
export { limitRules, type RateLimitName } from './limit-rules.js';
export { PendingMigrationsError } from './engines.js';
export { applyMigrations, pendingMigrations } from './migrations.js';

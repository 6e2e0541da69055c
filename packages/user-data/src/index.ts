export type { ErasureSettings, UserDataDeps } from './deps.js';
export { ERASURE_DEFAULTS, eraseUser } from './erase.js';
export { ErasureRepository, type ErasureRecord, type RemovedCounts } from './erasures.js';
export { exportUser, JSONL_FILES, type ExportManifest } from './export.js';
export { TABLE_PLANS, type TablePlan } from './tables.js';
export { createUserData, type UserData } from './user-data.js';
export { serviceUserData } from './service.js';

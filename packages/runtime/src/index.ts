export {
  startService,
  type ServiceContext,
  type MountedRole,
  type StartServiceOptions,
  type RunningService,
} from './start-service.js';
export { registeredRoutes } from './registered-routes.js';
export { requestLimits, type RequestLimits } from './request-limits.js';
export { runSlotHolder, type HeldRunSlot, type ReleaseSlot } from './run-admission.js';
export { ServiceAudit, type AuditedRequest } from './service-audit.js';
export type { AuditActor, AuditEntry, AuditRecord } from '@agent-backend/store';
export { runMigrateCommand } from './migrate-command.js';

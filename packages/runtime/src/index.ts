export {
  startService,
  type ServiceContext,
  type MountedRole,
  type StartServiceOptions,
  type RunningService,
} from './start-service.js';
export { registeredRoutes } from './route-table.js';

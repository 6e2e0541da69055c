import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import { registerAuthRoutes } from './auth-routes.js';

/** Mounts the HTTP API (spec section 4 endpoints served by `apps/api`) on the context's server. */
export async function mountApi(context: ServiceContext): Promise<MountedRole> {
  registerAuthRoutes(context);
  return { name: 'api', close: async () => {} };
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@agent-backend/config';
import { createLogger } from '@agent-backend/logger';
import { createEngines } from '@agent-backend/engines';
import { bearerAuth, createHttpServer, type DocumentedRoute } from '@agent-backend/http-server';
import { createTokenVerifier, RevocationList, throwawayKeys } from '@agent-backend/auth';
import { createServiceMetrics } from '@agent-backend/metrics';
import { registerMetricsRoute } from './metrics-route.js';
import { ServiceAudit } from './service-audit.js';
import { requestLimits } from './request-limits.js';
import type { ServiceContext, StartServiceOptions } from './start-service.js';

/**
 * The routes and mounts `mount` registers, with their documentation
 * (`HttpServer.documented()`): the server is built as `startService` builds it, the role mounted
 * on it, its table read, and everything closed again, without listening on a port. It runs on the
 * embedded engines (in-process queues and bus, PGlite in a temporary directory, not migrated),
 * with throwaway keys and the configuration's defaults, so the table does not depend on the
 * environment it is read in (routes a configuration turns off are documented all the same).
 * `pnpm docs:api` builds docs/openapi.json from the api role's table.
 */
export async function registeredRoutes(
  mount: StartServiceOptions['mount'],
): Promise<DocumentedRoute[]> {
  const dataDir = mkdtempSync(join(tmpdir(), 'route-table-'));
  try {
    const config = loadConfig('all-in-one', { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    const logger = createLogger({ level: 'silent' });
    const metrics = createServiceMetrics({ enabled: config.METRICS_ENABLED });
    const engines = await createEngines(config, logger, { metrics });
    try {
      const keys = await throwawayKeys();
      const app = createHttpServer({ logger, readiness: engines.checks });
      registerMetricsRoute(app, metrics, config.METRICS_TOKEN);
      // Never started: the table needs the routes, not the cutoffs.
      const revocations = new RevocationList(engines.db);
      const verifyToken = createTokenVerifier(keys);
      const requireUser = bearerAuth(verifyToken);
      const limits = requestLimits(engines.limits, config, metrics, logger);
      const context: ServiceContext = {
        config,
        logger,
        engines,
        keys,
        app,
        requireUser,
        verifyToken,
        revocations,
        metrics,
        limits,
        audit: new ServiceAudit(engines.db, logger),
      };
      const roles = await mount(context);
      const routes = app.documented();
      await Promise.all([app.close(), ...roles.map((role) => role.close())]);
      return routes;
    } finally {
      await engines.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

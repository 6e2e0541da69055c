import { configWarnings, loadConfigOrExit, type Config, type Role } from '@agent-backend/config';
import { createLogger, type Logger } from '@agent-backend/logger';
import { createEngines, type Engines } from '@agent-backend/engines';
import {
  bearerAuth,
  createHttpServer,
  handleShutdown,
  type BearerHook,
  type HttpServer,
  type VerifyAccessToken,
} from '@agent-backend/http-server';
import {
  createTokenVerifier,
  resolveKeys,
  RevocationList,
  throwawayKeys,
  withProviderTokens,
  type KeyPair,
} from '@agent-backend/auth';
import { providerTokensFromConfig } from './provider-tokens.js';
import { createServiceMetrics, UNMATCHED_ROUTE, type ServiceMetrics } from '@agent-backend/metrics';
import { startTracing } from '@agent-backend/tracing';
import { buildInfo } from './build-info.js';
import { registerMetricsRoute } from './metrics-route.js';
import { requestLimits, type RequestLimits } from './request-limits.js';
import { ServiceAudit } from './service-audit.js';
import { startFailure } from './start-failure.js';
import { collectStartGarbageSoon } from './start-garbage.js';

export interface ServiceContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly engines: Engines;
  /** The JWT keys (the private key only where the role signs tokens). */
  readonly keys: KeyPair;
  readonly app: HttpServer;
  /**
   * `preHandler` (or `onRequest`) requiring a valid access token; sets `request.userId` from its
   * `sub`. Its routes are listed with auth `bearer`, and their handlers' requests have `userId`.
   */
  readonly requireUser: BearerHook;
  /**
   * The verifier behind `requireUser`, for what authenticates outside HTTP routes (WebSocket
   * upgrades): the service's own tokens, and the identity provider's when `AUTH_JWKS_URL` is set;
   * tokens of a user revoked by the operator are refused.
   */
  readonly verifyToken: VerifyAccessToken;
  /**
   * Per-user cutoffs of the service's access tokens (revoke-user, sign out everywhere), read
   * from the store every 2 s; `requireUser` refuses revoked tokens, the gateway closes sockets.
   */
  readonly revocations: RevocationList;
  /**
   * This instance's metrics, on a registry of its own, served at `GET /metrics`; with
   * `METRICS_ENABLED=false` every instrument is a no-op.
   */
  readonly metrics: ServiceMetrics;
  /** Per-user limits for routes: `limit: limits.rate('invoke')`, run slots (docs/limits.md). */
  readonly limits: RequestLimits;
  /** The audit log of security events: `audit.record(entry, request)` (docs/operations.md). */
  readonly audit: ServiceAudit;
}

/** What a role leaves running; `close` runs after the HTTP server stopped accepting. */
export interface MountedRole {
  readonly name: string;
  close(): Promise<void>;
}

export interface StartServiceOptions {
  /** Apply database migrations at start (unless `MIGRATE_ON_START=false`). */
  migrate: boolean;
  /** Whether `/readyz` includes the database (the gateway does not serve from it). @default true */
  databaseReadiness?: boolean;
  /** Open the job queue at its first call (a role that uses none). @default false */
  jobsAtFirstUse?: boolean;
  /** Mounts the role(s) on the context: routes, upgrade handlers, processors. */
  mount(context: ServiceContext): Promise<MountedRole[]>;
}

export interface RunningService extends ServiceContext {
  /** Runs the shutdown steps (also bound to SIGTERM/SIGINT) and exits the process. */
  shutdown(): Promise<void>;
}

/**
 * Boots one process: validated config (exits listing every problem), logger, engines, keys,
 * the HTTP server with health routes, the role(s), then listens. SIGTERM stops accepting
 * connections, closes the roles (draining streams, sockets and jobs), then the engines, and
 * exits; `SHUTDOWN_TIMEOUT_MS` bounds the whole sequence.
 */
export async function startService(
  role: Role,
  options: StartServiceOptions,
): Promise<RunningService> {
  const config = loadConfigOrExit(role);
  // Off (no OTLP endpoint): the SDK is not loaded, `@opentelemetry/api` answers with no-ops. On,
  // the SDK reads the exporter's, batching and sampling variables (validated with the config).
  const tracing = await startTracing({
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    serviceName: config.OTEL_SERVICE_NAME ?? `agent-backend-${role}`,
    instanceId: config.instanceId,
  });
  const logger = createLogger({
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
    base: { role, instance: config.instanceId },
    traceIds: tracing.enabled,
  });
  for (const warning of configWarnings(config)) logger.warn({ code: 'config_warning' }, warning);
  process.on('unhandledRejection', (reason) =>
    logger.error({ err: reason }, 'unhandled rejection'),
  );

  const metrics = createServiceMetrics({
    enabled: config.METRICS_ENABLED,
    build: buildInfo(config.BUILD_COMMIT),
  });
  const listen = { port: config.PORT, host: config.HOST };
  let engines: Engines;
  try {
    engines = await createEngines(config, logger, {
      migrate: options.migrate && config.MIGRATE_ON_START,
      requireMigrated: options.migrate && !config.MIGRATE_ON_START,
      databaseReadiness: options.databaseReadiness,
      jobsAtFirstUse: options.jobsAtFirstUse,
      metrics,
    });
  } catch (error) {
    const reason = startFailure(error, listen);
    if (!reason) throw error;
    exitWith(role, reason);
  }
  const keys =
    role === 'worker' && !config.jwtPublicKeyPem && !config.JWT_KEYS_FILE
      ? // The worker serves no authenticated route; a throwaway pair keeps the context whole.
        await throwawayKeys()
      : await resolveKeys({
          keysFile: config.JWT_KEYS_FILE,
          onKeysFileError: (error) => logger.error({ err: error }, 'JWT_KEYS_FILE unreadable'),
          publicKeyPem: config.jwtPublicKeyPem,
          privateKeyPem: config.jwtPrivateKeyPem,
          // Only the all-in-one may fall back to generated development keys.
          dataDir: role === 'all-in-one' ? config.DATA_DIR : undefined,
        });
  const app = createHttpServer({
    logger,
    readiness: engines.checks,
    corsOrigins: config.CORS_ALLOWED_ORIGINS,
    trustProxy: config.TRUST_PROXY,
    ...(tracing.enabled ? { tracer: tracing.tracer } : {}),
    ...(metrics.enabled
      ? {
          observe: (method: string, route: string | undefined, status: number, seconds: number) =>
            metrics.http.request(method, route ?? UNMATCHED_ROUTE, status, seconds),
        }
      : {}),
  });
  // With METRICS_PORT, /metrics moves to a listener of its own (off the public port's routes).
  const metricsServer =
    metrics.enabled && config.METRICS_PORT !== undefined
      ? createHttpServer({ logger: logger.child({ listener: 'metrics' }) })
      : undefined;
  registerMetricsRoute(app, metrics, config.METRICS_TOKEN, { elsewhere: Boolean(metricsServer) });
  if (metricsServer) registerMetricsRoute(metricsServer, metrics, config.METRICS_TOKEN);
  const revocations = new RevocationList(engines.db, {
    onError: (error) => logger.warn({ err: error }, 'reading token revocations failed'),
  });
  // The worker serves no user; the others refuse revoked tokens from the first request on.
  if (role !== 'worker') await revocations.start();
  // Verified tokens are remembered until they expire: one signature check per token, not per
  // request; the revocation check after it is a map lookup.
  const verify = withProviderTokens(
    createTokenVerifier(keys),
    providerTokensFromConfig(config, logger),
  );
  const verifyToken: VerifyAccessToken = async (token) => revocations.check(await verify(token));
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
  const roles = await options.mount(context);

  // Bound before listening, so a failed listen closes what the roles opened the same way.
  let failedToStart = false;
  const shutdown = handleShutdown({
    logger,
    exit: (code) => process.exit(failedToStart ? 1 : code),
    timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    steps: [
      {
        // Stop accepting and let in-flight requests finish while the roles end their long-lived
        // streams, sockets and jobs (which would otherwise hold `app.close()` open).
        name: 'http and roles',
        run: () => Promise.all([app.close(), ...roles.map((r) => r.close())]),
      },
      {
        name: 'engines',
        run: () => {
          void metricsServer?.close();
          revocations.close();
          keys.close?.();
          return engines.close();
        },
      },
      // Last, so the spans of the shutdown itself are sent too.
      { name: 'traces', run: () => tracing.close() },
    ],
  });
  try {
    await app.listen(listen);
    if (metricsServer)
      await metricsServer.listen({ port: config.METRICS_PORT!, host: config.HOST });
  } catch (error) {
    const reason = startFailure(error, listen);
    if (!reason) throw error;
    failedToStart = true;
    process.stderr.write(`${role}: ${reason}\n`);
    await shutdown();
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info(
    {
      port,
      host: config.HOST,
      engines: config.REDIS_URL ? 'redis' : 'in-process',
      db: engines.db.dialect,
    },
    'listening',
  );
  const summary = startSummary(role, config, port, engines.db.dialect);
  logger.info(summary);
  collectStartGarbageSoon((error) =>
    logger.warn({ err: error }, 'collecting the garbage of start-up failed'),
  );
  // A person at a terminal reading JSON lines gets it plain too (collectors see no TTY).
  if (config.LOG_FORMAT === 'json' && process.stderr.isTTY) process.stderr.write(`${summary}\n`);

  return { ...context, shutdown };
}

/** A start that cannot go on for a reason a person can fix: one line, no stack trace. */
function exitWith(role: Role, reason: string): never {
  process.stderr.write(`${role}: ${reason}\n`);
  process.exit(1);
}

/**
 * The line a person reads at start: where the service answers, on which engines, and where an
 * embedded all-in-one keeps its data.
 */
function startSummary(role: Role, config: Config, port: number, dialect: string): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const database = dialect === 'pglite' ? `PGlite in ${config.DATA_DIR}` : 'PostgreSQL';
  const bus = config.REDIS_URL ? 'Redis' : 'in-process';
  // The roles that serve the playground (apps/api) say where a person can open it. An api
  // replica alone serves the page, but its nodes panel and notifications speak to /ws/web.
  const playground =
    role === 'all-in-one'
      ? `; playground: ${url}/`
      : role === 'api'
        ? `; playground: ${url}/, which needs the gateway behind the same origin, as infra/nginx.conf sets up`
        : '';
  return `${role} ready at ${url} (database: ${database}; queues and bus: ${bus}${playground})`;
}

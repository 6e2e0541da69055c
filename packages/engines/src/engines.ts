import { join } from 'node:path';
import type { Config } from '@agent-backend/config';
import type { Logger } from '@agent-backend/logger';
import { createMemoryBus, createMemoryHub, createRedisBus, type Bus } from '@agent-backend/bus';
import {
  createMemoryEphemeralStore,
  createRedisEphemeralStore,
  type EphemeralStore,
} from '@agent-backend/ephemeral';
import { createMemoryPresence, createRedisPresence, type Presence } from '@agent-backend/presence';
import {
  createBullmqJobQueue,
  jobQueueAtFirstUse,
  createMemoryJobQueue,
  FORCE_CLOSE_GRACE_MS,
  type BullmqQueues,
  type JobQueue,
  type JobRetentionPolicy,
} from '@agent-backend/jobs';
import { createMemoryLimits, createRedisLimits, type Limits } from '@agent-backend/limits';
import { NO_METRICS, type ServiceMetrics } from '@agent-backend/metrics';
import {
  closeRedis,
  createRedis,
  redisKeys,
  type Redis,
  type RedisTarget,
} from '@agent-backend/redis';
import { createMemoryRunLog, createRedisRunLog, type RunLog } from '@agent-backend/run-log';
import { instrumentBus, instrumentJobQueue } from './instrument.js';
import { limitRules } from './limit-rules.js';
import {
  createPgliteDatabase,
  createPostgresDatabase,
  pgliteDataDirExists,
  PGLITE_CACHE_CHECK_MS,
  type Database,
} from '@agent-backend/store';
import { applyMigrations, pendingMigrations } from './migrations.js';

/**
 * Every shared-state port of one process, on the embedded adapters (in-process + PGlite) or the
 * distributed ones (Redis + PostgreSQL), chosen by `REDIS_URL` / `DATABASE_URL` (DESIGN.md).
 */
export interface Engines {
  readonly bus: Bus;
  readonly ephemeral: EphemeralStore;
  readonly presence: Presence;
  /** Per-user request rates and run slots, for the whole deployment (docs/limits.md). */
  readonly limits: Limits;
  /** Events of agent runs, readable from any replica for a window (resumable streams). */
  readonly runLog: RunLog;
  /** Queues, delayed jobs and schedules: in-process timers, or BullMQ on Redis. */
  readonly jobs: JobQueue;
  /**
   * BullMQ's own queue objects when the jobs run on BullMQ (REDIS_URL set), for the queue
   * dashboard and queue-depth metrics; absent on the in-process engine. A function, as the job
   * queue may not be open yet (`jobsAtFirstUse`): calling it opens it, like a job call would.
   */
  readonly bullmq?: () => Promise<BullmqQueues>;
  /** The durable store. A PostgreSQL pool connects lazily, so roles that never query it pay nothing. */
  readonly db: Database;
  /** Readiness probes for `/readyz`: `redis` and/or `postgres` (or `pglite`). */
  readonly checks: Record<string, () => Promise<unknown>>;
  /** Closes everything, bus first (no new messages), the database last. Idempotent. */
  close(): Promise<void>;
}

/** Where Redis is, by `REDIS_MODE` (`url` is `REDIS_URL`, set in every mode by loadConfig). */
export function redisTargetOf(config: Config, url: string): RedisTarget {
  switch (config.REDIS_MODE) {
    case 'cluster':
      return { mode: 'cluster', url, nodes: config.REDIS_CLUSTER_NODES };
    case 'sentinel':
      return {
        mode: 'sentinel',
        url,
        sentinels: config.REDIS_SENTINELS,
        name: config.REDIS_SENTINEL_NAME ?? '',
        ...(config.REDIS_SENTINEL_USERNAME
          ? { sentinelUsername: config.REDIS_SENTINEL_USERNAME }
          : {}),
        ...(config.REDIS_SENTINEL_PASSWORD
          ? { sentinelPassword: config.REDIS_SENTINEL_PASSWORD }
          : {}),
      };
    case 'standalone':
      return { mode: 'standalone', url };
  }
}

/** The finished jobs each queue keeps (`JOBS_KEEP_*`), the same on both engines. */
function jobRetentionOf(config: Config): JobRetentionPolicy {
  return {
    completed: { ageMs: config.JOBS_KEEP_COMPLETED_MS, count: config.JOBS_KEEP_COMPLETED_COUNT },
    failed: { ageMs: config.JOBS_KEEP_FAILED_MS, count: config.JOBS_KEEP_FAILED_COUNT },
  };
}

export interface CreateEnginesOptions {
  /** Apply pending migrations at start (api, worker, all-in-one). @default false */
  migrate?: boolean;
  /**
   * Without `migrate`: a PostgreSQL schema with a pending migration refuses the start
   * ({@link PendingMigrationsError}); the embedded PGlite database is migrated instead (nobody
   * else can). For the roles that would migrate, started with `MIGRATE_ON_START=false`.
   * @default false
   */
  requireMigrated?: boolean;
  /** Include the database in readiness (roles that serve from it). @default true */
  databaseReadiness?: boolean;
  /** Where the bus and the job queue report their traffic. @default no metrics */
  metrics?: ServiceMetrics;
  /**
   * On Redis, open the job queue (BullMQ and its connection) at its first call (or `bullmq()`),
   * not at start: for a role that enqueues only on some requests (the api) or never (the
   * gateway), so an idle replica does not load BullMQ. @default false
   */
  jobsAtFirstUse?: boolean;
}

/** A role started without migrating found a schema older than its code. */
export class PendingMigrationsError extends Error {
  constructor(readonly pending: readonly string[]) {
    super(
      `the database schema is behind this version (pending: ${pending.join(', ')}); run the ` +
        "`migrate` command (node apps/all-in-one/dist/migrate.js, the Helm chart's migration Job) " +
        'or start with MIGRATE_ON_START=true',
    );
    this.name = 'PendingMigrationsError';
  }
}

/**
 * How long closing one port or connection may take before the next goes on (the job queue gets
 * its drain on top). Ports wait on their connections (an `UNSUBSCRIBE` queued until Redis comes
 * back); the connections, closed after the ports, end forcibly and reject what still waits.
 */
export const ENGINE_CLOSE_GRACE_MS = 3_000;

const elapsedMs = (since: number) => Math.round(performance.now() - since);
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/**
 * PGlite in `dir`, on its own thread, with a log line on how long it took to open. A new data
 * directory is announced first: it is copied from the cached initdb template (under a second) or,
 * on a machine's first start of this PGlite version, made by initdb (seconds).
 */
async function openEmbeddedDatabase(
  dir: string,
  sharedBuffersMb: number | undefined,
  logger: Logger,
): Promise<Database> {
  const started = performance.now();
  const fresh = !pgliteDataDirExists(dir);
  if (fresh) logger.info({ dataDir: dir }, `database: creating the embedded database in ${dir}`);
  const db = await createPgliteDatabase({
    dataDir: dir,
    thread: true,
    sharedBuffersMb,
    cacheCheckMs: PGLITE_CACHE_CHECK_MS,
    onCacheChange: ({ fromMb, toMb, ms, error }) => {
      if (error) {
        logger.error(
          { dataDir: dir, fromMb, toMb, error: error.message },
          `database: the page cache could not grow from ${fromMb}MB (${error.message}); ${
            toMb ? `kept ${toMb}MB` : 'the database could not be reopened'
          }`,
        );
      } else {
        logger.info(
          { dataDir: dir, fromMb, toMb, ms },
          `database: the data grew; page cache ${fromMb}MB -> ${toMb}MB (PGlite reopened in ${ms} ms)`,
        );
      }
    },
  });
  const how = {
    existing: 'opened',
    template: 'created from the cached initdb template',
    initdb: 'created by initdb (the template for later data directories is now cached)',
  }[db.origin];
  // Sized by the data when not set (docs/deployment.md, "Memory"): said, so an operator sees it.
  const pageCache = `${db.sharedBuffersMb}MB`;
  logger.info(
    { dataDir: dir, origin: db.origin, pageCache, ms: elapsedMs(started) },
    `database: PGlite ${how} (page cache ${pageCache}) in ${seconds(started)}`,
  );
  return db;
}

/** Opens the engines for `config`; on failure closes whatever it had opened and rethrows. */
export async function createEngines(
  config: Config,
  logger: Logger,
  options: CreateEnginesOptions = {},
): Promise<Engines> {
  const closers: Array<{ what: string; close: () => Promise<void>; withinMs?: number }> = [];
  // Every step bounded, so a SIGTERM while Redis is down (or mid-failover) still exits in time.
  const close = async () => {
    for (const { what, close: fn, withinMs = ENGINE_CLOSE_GRACE_MS } of closers
      .splice(0)
      .reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const closing = fn().then(
        () => 'closed' as const,
        (error: unknown) => void logger.warn({ err: error, what }, 'engine close failed'),
      );
      const expired = new Promise<'expired'>((resolve) => {
        timer = setTimeout(resolve, withinMs, 'expired');
      });
      if ((await Promise.race([closing, expired])) === 'expired')
        logger.warn(
          { what, ms: withinMs },
          `engine close: ${what} still closing after ${withinMs} ms, going on`,
        );
      clearTimeout(timer);
    }
  };
  try {
    const checks: Record<string, () => Promise<unknown>> = {};

    const db = config.DATABASE_URL
      ? await createPostgresDatabase({
          url: config.DATABASE_URL,
          schema: config.DATABASE_SCHEMA,
          queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
          preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
        })
      : await openEmbeddedDatabase(
          join(config.DATA_DIR, 'pglite'),
          config.PGLITE_SHARED_BUFFERS_MB,
          logger,
        );
    closers.push({ what: 'database', close: () => db.close() });
    if (options.databaseReadiness !== false)
      checks[db.dialect === 'postgres' ? 'postgres' : 'pglite'] = () => db.ping();
    if (options.migrate || (options.requireMigrated && db.dialect === 'pglite')) {
      // The embedded database is this process's alone: nobody else can migrate it.
      await applyMigrations(config, logger, db);
    } else if (options.requireMigrated) {
      const pending = await pendingMigrations(db);
      if (pending.length > 0) throw new PendingMigrationsError(pending);
    }

    const presenceOptions = {
      nodeTtlMs: config.NODE_SILENT_TIMEOUT_MS,
      replicaTtlMs: config.GATEWAY_REPLICA_TTL_MS,
    };
    const limitOptions = { rules: limitRules(config), leaseMs: config.RUN_SLOT_LEASE_MS };
    let bus: Bus;
    let ephemeral: EphemeralStore;
    let presence: Presence;
    let limits: Limits;
    let runLog: RunLog;
    let jobs: JobQueue;
    let bullmq: (() => Promise<BullmqQueues>) | undefined;
    if (config.REDIS_URL) {
      const onError = (error: Error) => logger.warn({ err: error }, 'redis connection error');
      const name = `${config.role}:${config.instanceId}`;
      // Commands of requests (presence, ephemeral keys, run log, publishes) get a deadline, so a
      // request answers while Redis is unreachable instead of waiting out every reconnect
      // (tests/faults: webhook deliveries and syncs hung through a 10 s Redis outage).
      const target = redisTargetOf(config, config.REDIS_URL);
      const redis: Redis = createRedis(target, {
        name,
        onError,
        commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
        redisOptions: { enableAutoPipelining: true },
      });
      closers.push({ what: 'redis', close: () => closeRedis(redis) });
      const subscriber = createRedis(target, {
        name: `${name}:sub`,
        onError,
        maxRetriesPerRequest: null,
        shardedSubscriber: true,
      });
      closers.push({ what: 'redis subscriber', close: () => closeRedis(subscriber) });
      const prefix = config.REDIS_KEY_PREFIX;
      bus = createRedisBus({
        publisher: redis,
        subscriber,
        prefix,
        nodeId: config.instanceId,
        onError: (error) => logger.warn({ err: error }, 'bus dropped a message'),
      });
      ephemeral = createRedisEphemeralStore({ redis, prefix });
      presence = createRedisPresence({ redis, prefix, ...presenceOptions });
      limits = createRedisLimits({ redis, prefix, ...limitOptions });
      runLog = createRedisRunLog({ redis, prefix, retentionMs: config.RUN_LOG_RETENTION_MS });
      // BullMQ blocks on its connections, so it gets its own, which never give up on a command.
      let jobsConnection: Redis | undefined;
      closers.push({
        what: 'redis jobs connection',
        close: async () => {
          if (jobsConnection) await closeRedis(jobsConnection);
        },
      });
      const openBullmq = () => {
        jobsConnection = createRedis(target, {
          name: `${name}:jobs`,
          onError,
          maxRetriesPerRequest: null,
        });
        return createBullmqJobQueue({
          connection: jobsConnection,
          prefix: redisKeys(prefix, { cluster: target.mode === 'cluster' }).jobs(),
          lockDurationMs: config.JOBS_LOCK_MS,
          retention: jobRetentionOf(config),
          drainTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
          commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
          onError: (error, info) => logger.warn({ err: error, ...info }, 'job failed'),
        });
      };
      if (options.jobsAtFirstUse) {
        const firstUse = jobQueueAtFirstUse(openBullmq);
        jobs = firstUse;
        bullmq = async () => (await firstUse.open()).bullmq;
      } else {
        const bullJobs = await openBullmq();
        jobs = bullJobs;
        bullmq = async () => bullJobs.bullmq;
      }
      checks.redis = () => redis.ping();
    } else {
      bus = createMemoryBus({
        hub: createMemoryHub(),
        nodeId: config.instanceId,
        onError: (error) => logger.warn({ err: error }, 'bus dropped a message'),
      });
      ephemeral = createMemoryEphemeralStore();
      presence = createMemoryPresence(presenceOptions);
      limits = createMemoryLimits(limitOptions);
      runLog = createMemoryRunLog({ retentionMs: config.RUN_LOG_RETENTION_MS });
      jobs = createMemoryJobQueue({
        drainTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
        retention: jobRetentionOf(config),
        onError: (error, info) => logger.warn({ err: error, ...info }, 'job failed'),
      });
    }
    // Registered after the connections, so they close before the connections (reverse order).
    closers.push(
      { what: 'run log', close: () => runLog.close() },
      {
        what: 'jobs',
        close: () => jobs.close(),
        // The drain, then BullMQ's forced steps (closeBullmq), then a margin.
        withinMs: config.SHUTDOWN_TIMEOUT_MS + 3 * FORCE_CLOSE_GRACE_MS,
      },
      { what: 'presence', close: () => presence.close() },
      { what: 'limits', close: () => limits.close() },
      { what: 'ephemeral', close: () => ephemeral.close() },
      { what: 'bus', close: () => bus.close() },
    );

    // Measured only when metrics are on: off, the ports are the adapters themselves.
    const metrics = options.metrics ?? NO_METRICS;
    if (metrics.enabled) {
      bus = instrumentBus(bus, metrics.bus);
      jobs = instrumentJobQueue(jobs, metrics.jobs);
    }

    let closed: Promise<void> | undefined;
    return {
      bus,
      ephemeral,
      presence,
      limits,
      runLog,
      jobs,
      ...(bullmq ? { bullmq } : {}),
      db,
      checks,
      close: () => (closed ??= close()),
    };
  } catch (error) {
    await close();
    throw error;
  }
}

import type { SandboxProvider } from '@agent-backend/sandbox';
import type { ServiceContext } from '@agent-backend/runtime';
import { startPeriodic } from './periodic.js';
import { sweepRetention, type RetentionSettings } from './retention.js';

/** The ephemeral key that elects one worker per retention interval. */
const SWEEP_LOCK = 'retention-sweep';

/** The retention settings of the configuration (`RETENTION_*`, `AUDIT_LOG_RETENTION_DAYS`). */
export function retentionSettings(config: ServiceContext['config']): RetentionSettings {
  return {
    days: {
      sessions: config.RETENTION_SESSIONS_DAYS,
      task_runs: config.RETENTION_TASK_RUNS_DAYS,
      knowledge_documents: config.RETENTION_KNOWLEDGE_DOCUMENTS_DAYS,
      memories: config.RETENTION_MEMORIES_DAYS,
      audit_events: config.AUDIT_LOG_RETENTION_DAYS,
    },
    batchSize: config.RETENTION_BATCH_SIZE,
  };
}

/**
 * The worker's retention sweep (docs/operations.md, "Retention"): every
 * `RETENTION_SWEEP_INTERVAL_MS`, one worker (elected by a key in the ephemeral store that lives
 * for most of an interval; the all-in-one's in process) deletes what is past its retention, and
 * destroys the sandboxes of the sessions it deleted at `sandboxProviders`.
 * Counts go to `retention_removed_total`, each sweep's time to `retention_sweep_duration_seconds`,
 * and a sweep that removed something logs `retention sweep` with the counts. A sweep stops
 * between two batches at shutdown. Returns the stop function.
 */
export function startRetentionSweep(
  context: Pick<ServiceContext, 'engines' | 'logger' | 'config' | 'metrics'>,
  sandboxProviders: readonly SandboxProvider[],
): () => Promise<void> {
  const { engines, logger, config, metrics } = context;
  const interval = config.RETENTION_SWEEP_INTERVAL_MS;
  const settings = retentionSettings(config);
  const stopping = new AbortController();
  const sweep = async () => {
    const elected = await engines.ephemeral.set(SWEEP_LOCK, config.instanceId, {
      ifAbsent: true,
      ttlMs: Math.max(500, Math.floor(interval * 0.9)),
    });
    if (!elected) return;
    const started = performance.now();
    try {
      const removed = await sweepRetention(
        {
          db: engines.db,
          ephemeral: engines.ephemeral,
          sandboxProviders,
          sandboxLeft: (sandbox, why) =>
            logger.warn({ ...sandbox, why }, 'retention: sandbox left to the sandbox sweep'),
          removed: (kind, count) => metrics.retention.removed(kind, count),
          signal: stopping.signal,
        },
        settings,
      );
      metrics.retention.swept('ok', (performance.now() - started) / 1000);
      if (Object.values(removed).some((count) => count > 0)) {
        logger.info({ removed }, 'retention sweep');
      }
    } catch (error) {
      metrics.retention.swept('failed', (performance.now() - started) / 1000);
      throw error;
    }
  };
  const stop = startPeriodic(interval, sweep, (error) =>
    logger.error({ err: error }, 'retention sweep failed'),
  );
  return async () => {
    stopping.abort();
    await stop();
  };
}

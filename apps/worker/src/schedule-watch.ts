import type { ServiceContext } from '@agent-backend/runtime';
import { reconcileSchedules } from '@agent-backend/scheduler';
import { startPeriodic } from './periodic.js';

/**
 * A key in the ephemeral store (Redis, next to the BullMQ schedules) written after each
 * reconciliation. Redis losing its data loses it together with the schedules.
 */
const SCHEDULES_MARKER = 'scheduler:schedules-reconciled';

/** How often a worker looks for the marker: one `GET` per interval. */
export const SCHEDULE_WATCH_INTERVAL_MS = 5_000;

/**
 * Reconciles the task schedules again when the job backend lost them while this worker ran.
 *
 * Why: reconciliation at start alone left a Redis that restarted empty (no persistence, a
 * replacement node, a flush) without any schedule until some worker restarted: every repeating
 * task silently stopped (found by tests/faults/redis-restart.test.ts). A marker key is written
 * once the schedules are rebuilt; when it is gone, so are they, and the next check rebuilds
 * them. Upserts are idempotent, so several workers noticing at once is harmless. A check that
 * fails (Redis still down) is retried at the next interval. On the in-process engine the marker
 * lives as long as the process, so this never fires. Returns the stop function.
 */
export async function startScheduleWatch(
  context: Pick<ServiceContext, 'engines' | 'logger'>,
  intervalMs = SCHEDULE_WATCH_INTERVAL_MS,
): Promise<() => Promise<void>> {
  const { engines, logger } = context;
  const reconcile = async () => {
    const result = await reconcileSchedules({ db: engines.db, jobs: engines.jobs });
    await engines.ephemeral.set(SCHEDULES_MARKER, new Date().toISOString());
    return result;
  };
  logger.info(await reconcile(), 'scheduled tasks reconciled');
  const check = async () => {
    if ((await engines.ephemeral.get(SCHEDULES_MARKER)) !== null) return;
    logger.warn('the job backend lost the task schedules (Redis restarted empty?): reconciling');
    logger.info(await reconcile(), 'scheduled tasks reconciled');
  };
  return startPeriodic(intervalMs, check, (error) =>
    logger.warn({ err: error }, 'schedule check failed'),
  );
}

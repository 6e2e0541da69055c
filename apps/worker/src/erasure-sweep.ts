import type { ServiceContext } from '@agent-backend/runtime';
import type { UserData } from '@agent-backend/user-data';
import { startPeriodic } from './periodic.js';

/**
 * The worker's part in users' erasures (docs/operations.md#export-and-erasure): at start and
 * every half of `ERASURE_LEASE_MS`, it finishes the erasures whose process died (their lease
 * ran out; each claimed by one worker) and forgets erased users whose access tokens have all
 * expired (their token cutoff and the user id on the erasure's record). Returns the stop function.
 */
export async function startErasureSweep(
  context: Pick<ServiceContext, 'logger' | 'config'>,
  userData: UserData,
): Promise<() => Promise<void>> {
  const { logger, config } = context;
  const sweep = async () => {
    const { resumed, forgotten } = await userData.sweep();
    for (const erasure of resumed) {
      logger.info(
        { erasureId: erasure.erasureId, removed: erasure.removed },
        'erasure cut short finished',
      );
    }
    if (forgotten > 0) logger.info({ forgotten }, 'erased users forgotten (their tokens expired)');
  };
  const onError = (error: unknown) => logger.error({ err: error }, 'erasure sweep failed');
  await sweep().catch(onError);
  return startPeriodic(Math.max(250, Math.floor(config.ERASURE_LEASE_MS / 2)), sweep, onError);
}

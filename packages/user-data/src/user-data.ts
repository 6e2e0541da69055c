import type { Readable } from 'node:stream';
import type { ErasureSettings, UserDataDeps } from './deps.js';
import { ERASURE_DEFAULTS, eraseUser } from './erase.js';
import { ErasureRepository, type ErasureRecord } from './erasures.js';
import { exportUser } from './export.js';

/** A user's data, exported or erased, for the routes of the user and of the operator. */
export interface UserData {
  /** Everything the user owns as one tar archive (see `exportUser`). */
  exportUser(userId: string): Readable;
  /**
   * Erases everything the user owns and says what was removed; resumes the user's pending
   * erasure if there is one. A user with nothing left gets an erasure that removed nothing.
   */
  eraseUser(userId: string): Promise<ErasureRecord>;
  /**
   * Finishes the erasures whose process died (their lease ran out), then forgets the erased
   * users whose access tokens have all expired. The worker calls it at start and periodically.
   * @returns the erasures it finished and how many users it forgot.
   */
  sweep(): Promise<{ resumed: ErasureRecord[]; forgotten: number }>;
}

export function createUserData(deps: UserDataDeps, settings: ErasureSettings = {}): UserData {
  const erasures = new ErasureRepository(
    deps.db,
    deps.instanceId,
    settings.leaseMs ?? ERASURE_DEFAULTS.leaseMs,
  );
  return {
    exportUser: (userId) => exportUser(deps, userId),
    eraseUser: (userId) => eraseUser(deps, settings, userId),
    async sweep() {
      const resumed: ErasureRecord[] = [];
      for (const { userId } of await erasures.claimAbandoned()) {
        deps.logger.info({ userId }, 'erasure: resuming an erasure cut short');
        resumed.push(await eraseUser(deps, settings, userId));
      }
      return { resumed, forgotten: await erasures.forgetExpired() };
    },
  };
}

import type { ServiceContext } from '@agent-backend/runtime';
import type { SandboxProvider } from '@agent-backend/sandbox';
import type { UserDataDeps } from './deps.js';
import { createUserData, type UserData } from './user-data.js';

/**
 * The {@link UserData} of a role's process: its engines, its revocation list, this instance's
 * id, `ERASURE_*` from its configuration, the sandbox providers its agent configured, and how
 * it stops a user's runs on every replica (`stopRuns`, see {@link UserDataDeps}).
 */
export function serviceUserData(
  context: Pick<ServiceContext, 'engines' | 'config' | 'logger' | 'revocations'>,
  sandboxProviders: readonly SandboxProvider[],
  stopRuns?: UserDataDeps['stopRuns'],
): UserData {
  const { engines, config, logger, revocations } = context;
  return createUserData(
    {
      db: engines.db,
      ephemeral: engines.ephemeral,
      presence: engines.presence,
      limits: engines.limits,
      runLog: engines.runLog,
      jobs: engines.jobs,
      revokeAccessTokens: (userId) => revocations.revokeUser(userId),
      sandboxProviders,
      ...(stopRuns ? { stopRuns } : {}),
      logger,
      instanceId: config.instanceId,
    },
    { batchSize: config.ERASURE_BATCH_SIZE, leaseMs: config.ERASURE_LEASE_MS },
  );
}

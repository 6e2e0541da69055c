import type { Logger } from '@agent-backend/logger';
import type { Presence } from '@agent-backend/presence';

/**
 * Keeps this replica alive in shared presence: one heartbeat now, then every third of
 * `replicaTtlMs`. A replica that dies without cleaning up stops beating, and its nodes disappear
 * from every listing within the TTL.
 */
export async function startReplicaHeartbeat(options: {
  presence: Presence;
  replicaId: string;
  replicaTtlMs: number;
  logger: Logger;
}): Promise<{ stop(): void }> {
  const { presence, replicaId, logger } = options;
  const beat = () =>
    presence
      .heartbeatReplica(replicaId)
      .catch((error: unknown) => logger.warn({ err: error }, 'replica heartbeat failed'));
  await beat();
  const timer = setInterval(beat, Math.max(100, Math.floor(options.replicaTtlMs / 3)));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

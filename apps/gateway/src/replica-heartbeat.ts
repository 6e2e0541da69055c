import type { Logger } from '@agent-backend/logger';
import type { Presence } from '@agent-backend/presence';

/**
 * Keeps this replica alive in shared presence: one heartbeat now, then every third of
 * `replicaTtlMs`. A replica that dies without cleaning up stops beating, and its nodes disappear
 * from every listing within the TTL.
 *
 * A beat that finds the replica was not live (Redis restarted empty, or this replica stalled
 * past its TTL and was taken for dead) calls `onRevived`: its node entries may be gone with it,
 * and the gateway writes them again instead of waiting for each one's next refresh. So does the
 * first beat that succeeds after one failed. (The first beat finds it not live too, before the
 * replica holds any node.)
 */
export async function startReplicaHeartbeat(options: {
  presence: Presence;
  replicaId: string;
  replicaTtlMs: number;
  logger: Logger;
  onRevived: () => void;
}): Promise<{ stop(): void }> {
  const { presence, replicaId, logger, onRevived } = options;
  // A beat that failed may still have run (a command that timed out waiting for a Redis that
  // came back empty is sent once it is back) and marked the replica live on an empty Redis:
  // the next beat then finds it live. So the first beat after a failure rewrites too.
  let failed = false;
  const beat = () =>
    presence.heartbeatReplica(replicaId).then(
      (wasLive) => {
        const revived = !wasLive || failed;
        failed = false;
        try {
          if (revived) onRevived();
        } catch (error) {
          logger.error({ err: error }, 'could not write the nodes of this replica again');
        }
      },
      (error: unknown) => {
        failed = true;
        logger.warn({ err: error }, 'replica heartbeat failed');
      },
    );
  await beat();
  const timer = setInterval(beat, Math.max(100, Math.floor(options.replicaTtlMs / 3)));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

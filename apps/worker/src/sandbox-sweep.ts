import type { SandboxCapability } from '@agent-backend/sandbox';
import type { ServiceContext } from '@agent-backend/runtime';
import { startPeriodic } from './periodic.js';

/** The ephemeral key that elects one worker per sweep interval. */
const SWEEP_LOCK = 'sandbox-sweep';

/**
 * The worker's sandbox sweep (docs/sandbox.md): every `SANDBOX_SWEEP_INTERVAL_MS`, one worker
 * (elected by a key in the ephemeral store that lives for most of an interval) pauses idle
 * session sandboxes, destroys long-idle ones, and destroys this deployment's sandboxes that no
 * session records (a replica killed between creating one and recording it). A sandbox the
 * provider refuses to pause or destroy is logged and retried next interval; it never stops the
 * others. Returns the stop function.
 */
export function startSandboxSweep(
  context: Pick<ServiceContext, 'engines' | 'logger' | 'config'>,
  sandboxes: SandboxCapability,
): () => Promise<void> {
  const { engines, logger, config } = context;
  if (sandboxes.providers.length === 0) return async () => {};
  const interval = config.SANDBOX_SWEEP_INTERVAL_MS;
  const sweep = async () => {
    const elected = await engines.ephemeral.set(SWEEP_LOCK, config.instanceId, {
      ifAbsent: true,
      ttlMs: Math.max(500, Math.floor(interval * 0.9)),
    });
    if (!elected) return;
    const { failures, ...outcome } = await sandboxes.sessions.sweep(sandboxes.providers);
    if (outcome.paused + outcome.destroyed + outcome.orphans > 0) {
      logger.info(outcome, 'sandboxes swept');
    }
    // Each failed step on its own line (provider, sandbox id, the provider's message: no keys);
    // the sweep did the rest, and the next one tries these again.
    for (const failure of failures) logger.warn(failure, 'sandbox sweep step failed');
  };
  return startPeriodic(interval, sweep, (error) =>
    logger.error({ err: error }, 'sandbox sweep failed'),
  );
}

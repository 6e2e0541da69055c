import type { Bus, Subscription } from '@agent-backend/bus';
import {
  resolvedChannel,
  type ApprovalRecord,
  type ApprovalResolution,
  type ApprovalStore,
} from './approval-store.js';

/** Re-read interval of the resolution while waiting. @default 1_000 */
export const DEFAULT_POLL_MS = 1_000;

/**
 * Waits on the replica holding the stream until the approval has an outcome, or until
 * `suspend` aborts (the run suspends): then `null`, with no outcome written. The bus message
 * of the deciding replica only wakes it early (the bus is at-most-once); the resolution key is
 * re-read on every wake and every `pollMs`, so a lost message costs at most `pollMs`.
 *
 * At `expiresAt` it writes `timed_out`, and when `signal` aborts `cancelled`, both with
 * `ifAbsent`: a decision that got there first wins and is returned instead.
 */
export async function waitForResolution(
  store: ApprovalStore,
  bus: Bus,
  record: ApprovalRecord,
  signal: AbortSignal,
  pollMs: number = DEFAULT_POLL_MS,
  suspend?: AbortSignal,
): Promise<ApprovalResolution | null> {
  let woken = false;
  let wake = () => {
    woken = true;
  };
  const subscription: Subscription | null = await bus
    .subscribe(resolvedChannel(record.requestId), () => wake())
    .catch(() => null);
  try {
    for (;;) {
      // Refreshed every poll, so a decision knows within WAITER_TTL_MS if this replica died.
      await store.markWaiting(record.requestId).catch(() => undefined);
      const found = await store.resolution(record.requestId).catch(() => null);
      if (found) return found;
      const final = signal.aborted
        ? ({ outcome: 'cancelled' } as const)
        : Date.now() >= record.expiresAt
          ? ({ outcome: 'timed_out' } as const)
          : null;
      if (final) {
        const written = await store.resolve(record, final).catch(() => true);
        if (written) return final;
        continue;
      }
      if (suspend?.aborted) return null;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          suspend?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(
          done,
          Math.min(pollMs, Math.max(1, record.expiresAt - Date.now())),
        );
        signal.addEventListener('abort', done, { once: true });
        suspend?.addEventListener('abort', done, { once: true });
        if (woken) done();
        wake = done;
      });
      woken = false;
    }
  } finally {
    await subscription?.unsubscribe().catch(() => undefined);
  }
}

import type { Request } from 'express';
import type { OperatorRefusal } from '@agent-backend/metrics';
import type { ServiceContext } from '@agent-backend/runtime';

/** How long one client address's refusal stands for the next ones in the audit log. */
export const REFUSAL_WINDOW_MS = 60_000;
/** Most `operator.auth_failed` events recorded per window, all addresses together. */
export const MOST_REFUSALS_PER_WINDOW = 30;

const addressKey = (address: string) => `operator-refused:${address}`;
const WINDOW_COUNT_KEY = 'operator-refused:*';

/**
 * Notes a request refused at the operator credential: every one is counted in
 * `operator_auth_failures_total{reason}` (`missing`: no bearer secret at all; `wrong`: any other
 * secret, a user's token included); the first of each client address per
 * {@link REFUSAL_WINDOW_MS} is recorded in the audit log as `operator.auth_failed` (method,
 * route template, reason; never what was presented), at most {@link MOST_REFUSALS_PER_WINDOW}
 * per window in all. The windows are keys in the ephemeral store, so every replica shares
 * them: a flood from any number of replicas or addresses adds a bounded number of rows. When
 * the ephemeral store fails, the refusal is counted and logged, not recorded.
 */
export function refusalRecorder({ engines, audit, metrics, logger }: ServiceContext) {
  return async (method: string, route: string, request: Request): Promise<void> => {
    const reason = refusalReason(request.headers.authorization);
    metrics.operator.refused(reason);
    const address = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    try {
      const first = await engines.ephemeral.set(addressKey(address), '1', {
        ifAbsent: true,
        ttlMs: REFUSAL_WINDOW_MS,
      });
      if (!first) return;
      const inWindow = await engines.ephemeral.increment(WINDOW_COUNT_KEY, {
        ttlMs: REFUSAL_WINDOW_MS,
      });
      if (inWindow > MOST_REFUSALS_PER_WINDOW) return;
    } catch (error) {
      logger.warn({ err: error, route, reason }, 'operator refusal not recorded');
      return;
    }
    await audit.record(
      {
        action: 'operator.auth_failed',
        userId: null,
        actor: 'anyone',
        details: { method, route, reason },
      },
      request,
    );
  };
}

/** `missing` when the request carries no bearer secret, `wrong` for any other. */
function refusalReason(header: string | undefined): OperatorRefusal {
  const match = /^bearer\s+(\S)/i.exec(header ?? '');
  return match ? 'wrong' : 'missing';
}

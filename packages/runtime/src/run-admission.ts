import type { Config } from '@agent-backend/config';
import { AppError } from '@agent-backend/http-server';
import type { Limits, SlotPool, TokenBudgets } from '@agent-backend/limits';
import type { Logger } from '@agent-backend/logger';
import type { ServiceMetrics } from '@agent-backend/metrics';

/** Gives back a slot; call it once, when what held it ended (any way). Never rejects. */
export type ReleaseSlot = () => Promise<void>;

/** A run's slot as the process running it holds it. */
export interface HeldRunSlot {
  /**
   * Frees it (the run ended, or suspended; also after {@link leave}, while no other taker holds
   * it in this process). Never rejects.
   */
  readonly release: ReleaseSlot;
  /**
   * Stops renewing it here without freeing it: the process that continues the run takes it
   * again (see {@link RunAdmission.runSlot}); otherwise its lease frees it.
   */
  leave(): void;
}

/** What a run and its stream take before any model request (docs/limits.md). */
export interface RunAdmission {
  /**
   * Before a run: the user's daily token budget, one of `MAX_CONCURRENT_RUNS_PER_USER` run slots
   * and one of `MAX_OPEN_STREAMS_PER_USER` stream slots, asked together (one round trip to the
   * store). Short of one: what was taken is given back and 429 is thrown (`budget_exceeded`, or
   * `rate_limited` with `details.limit` `concurrent_runs` / `open_streams`). With `runId` the run
   * slot is held under the run's own name, so the process that continues the run (a worker)
   * takes the same slot with {@link runSlot}.
   */
  admitRun(userId: string, runId?: string): Promise<Admitted>;
  /**
   * The slot of a run admitted earlier that continues in this process (a background run on a
   * worker, a run resumed or taken over): taken again under the run's name, over the limit if
   * need be (the run was admitted; the limit refuses new runs only). With the store down or
   * the limit off, nothing is held.
   */
  runSlot(userId: string, runId: string): Promise<HeldRunSlot>;
  /** One stream slot alone (a resumed stream), or 429 `rate_limited` (`open_streams`). */
  streamSlot(userId: string): Promise<ReleaseSlot>;
}

/** The holder id of a run's slot: the same in every process that runs it. */
export const runSlotHolder = (runId: string): string => `run:${runId}`;

/** The run and stream slots a run was admitted with. */
export interface Admitted {
  readonly run: HeldRunSlot;
  readonly releaseStream: ReleaseSlot;
}

/** A refusal not answered yet: the 429, and the limit it is counted under once it is. */
export interface Refusal {
  readonly error: AppError;
  readonly limit: string;
}

interface AdmissionDeps {
  readonly limits: Limits;
  readonly budgets: TokenBudgets;
  readonly config: Config;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /**
   * `LIMITS_ON_REDIS_ERROR`, after logging the failure: nothing (open: through) or the 429 to
   * answer (closed), not counted yet.
   */
  readonly storeDown: (limit: string, error: unknown) => AppError | undefined;
}

/** A check that ran: taken (with what gives it back) or refused (with the 429 to throw). */
type Outcome =
  { readonly release: ReleaseSlot; readonly leave?: () => void } | { readonly refusal: Refusal };

const NOTHING: ReleaseSlot = async () => {};
const NO_SLOT: HeldRunSlot = { release: NOTHING, leave: () => {} };

/** What each pool is called in `details.limit` and `rate_limited_total{limit}`. */
const POOL_LIMIT = { runs: 'concurrent_runs', streams: 'open_streams' } as const;

/** The admission, and what a caller that may answer another refusal instead uses. */
export interface RunAdmissionParts extends RunAdmission {
  /**
   * `admitRun` without answering a refusal: the first refusal (budget, then runs, then
   * streams) is returned, after giving back what was taken, and counted by {@link refuse} only
   * if it is the answer.
   */
  tryAdmitRun(userId: string, runId?: string): Promise<{ admitted: Admitted } | Refusal>;
  /** Counts the refusal in `rate_limited_total` and throws its 429. */
  refuse(refusal: Refusal): never;
}

export function runAdmission(deps: AdmissionDeps): RunAdmissionParts {
  const { limits, budgets, config, metrics, logger, storeDown } = deps;
  let holderSeq = 0;
  const maxOf = {
    runs: config.MAX_CONCURRENT_RUNS_PER_USER,
    streams: config.MAX_OPEN_STREAMS_PER_USER,
  };

  /** Settles a store failure as configured: through (nothing held) or the 429. */
  const failed = (limit: string, error: unknown): Outcome => {
    const refusal = storeDown(limit, error);
    return refusal ? { refusal: { error: refusal, limit } } : { release: NOTHING };
  };

  const slot = async (
    pool: 'runs' | 'streams',
    userId: string,
    named?: string,
  ): Promise<Outcome> => {
    const max = maxOf[pool];
    if (max === 0) return { release: NOTHING };
    const limit = POOL_LIMIT[pool];
    const holder = named ?? `${config.instanceId}:${process.pid}:${++holderSeq}`;
    let decision;
    try {
      decision = await limits.acquireSlot(pool as SlotPool, userId, holder, max);
    } catch (error) {
      return failed(limit, error);
    }
    if (!decision.granted) {
      const what = pool === 'runs' ? 'runs going' : 'agent streams open';
      const error = new AppError(
        'rate_limited',
        `too many ${what} at once: at most ${max} per user; retry when one has ended`,
        { limit, max },
        { 'Retry-After': '1' },
      );
      return { refusal: { error, limit } };
    }
    return held(decision, userId, pool);
  };

  const held = (
    decision: { release: () => Promise<void>; leave: () => void },
    userId: string,
    pool: string,
  ) => ({
    release: () =>
      decision.release().catch((error: unknown) =>
        // Not freed now: the lease frees it within RUN_SLOT_LEASE_MS.
        logger.warn({ err: error, userId, pool }, 'slot release failed; its lease will free it'),
      ),
    leave: decision.leave,
  });

  const budget = async (userId: string): Promise<Outcome> => {
    if (!budgets.enabled) return { release: NOTHING };
    let status;
    try {
      status = await budgets.status(userId);
    } catch (error) {
      return failed('token_budget', error);
    }
    if (!status || status.remaining > 0) return { release: NOTHING };
    const retry = Math.max(1, Math.ceil(status.resetMs / 1000));
    const error = new AppError(
      'budget_exceeded',
      `the daily token budget (${status.limit} tokens) is used up; it renews at 00:00 UTC`,
      {
        limit: 'token_budget',
        budget: status.limit,
        used: status.used,
        day: status.day,
        retry_after_seconds: retry,
      },
      { 'Retry-After': String(retry) },
    );
    return { refusal: { error, limit: 'token_budget' } };
  };

  /** All taken, or the first refusal after giving back whatever was taken. */
  const all = async (outcomes: Outcome[]): Promise<ReleaseSlot[] | Refusal> => {
    const refused = outcomes.find((o): o is { refusal: Refusal } => 'refusal' in o);
    const releases = outcomes.flatMap((o) => ('release' in o ? [o.release] : []));
    if (refused) {
      await Promise.all(releases.map((release) => release()));
      return refused.refusal;
    }
    return releases;
  };
  // Only the refusal answered is counted: with several short (or the rate short too, see
  // `rateAndAdmit`), one request is one refusal.
  const refuse = (refusal: Refusal): never => {
    metrics.limits.refused(refusal.limit);
    throw refusal.error;
  };
  const tryAdmitRun: RunAdmissionParts['tryAdmitRun'] = async (userId, runId) => {
    const outcomes = await Promise.all([
      budget(userId),
      slot('runs', userId, runId === undefined ? undefined : runSlotHolder(runId)),
      slot('streams', userId),
    ]);
    const taken = await all(outcomes);
    if (!Array.isArray(taken)) return taken;
    const [, releaseRun, releaseStream] = taken;
    const run = outcomes[1] as { release: ReleaseSlot; leave?: () => void };
    return {
      admitted: {
        run: { release: releaseRun!, leave: run.leave ?? (() => {}) },
        releaseStream: releaseStream!,
      },
    };
  };

  return {
    tryAdmitRun,
    refuse,
    async admitRun(userId, runId) {
      const decided = await tryAdmitRun(userId, runId);
      return 'admitted' in decided ? decided.admitted : refuse(decided);
    },
    async runSlot(userId, runId) {
      if (maxOf.runs === 0) return NO_SLOT;
      try {
        const decision = await limits.acquireSlot(
          'runs',
          userId,
          runSlotHolder(runId),
          Number.MAX_SAFE_INTEGER,
        );
        return decision.granted ? held(decision, userId, 'runs') : NO_SLOT;
      } catch (error) {
        logger.warn({ err: error, userId, runId }, 'run slot not taken: the limits store failed');
        return NO_SLOT;
      }
    },
    async streamSlot(userId) {
      const taken = await all([await slot('streams', userId)]);
      return Array.isArray(taken) ? taken[0]! : refuse(taken);
    },
  };
}

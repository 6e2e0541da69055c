import type { EphemeralStore } from '@agent-backend/ephemeral';

/** Lifetime of a session lease; a run renews it every third of this. @default 30_000 */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/**
 * Per owner and id, like the session itself: another user's run under the same id must not
 * hold this session. The user id is percent-encoded so that no `:` in it can make two
 * (user, session) pairs share a key.
 */
export const sessionLeaseKey = (userId: string, sessionId: string): string =>
  `${sessionLeasePrefix(userId)}${sessionId}`;

/** What every session lease of `userId` starts with, and no other user's does. */
const sessionLeasePrefix = (userId: string): string =>
  `agent:session-lease:${encodeURIComponent(userId)}:`;

/**
 * The runs holding a session lease of `userId` now: every run of the user that is running
 * (its lease is held before its first event, and renewed until it ends), including one whose
 * rows are not stored yet. A scan of the ephemeral store: for erasing a user, not per request.
 */
export async function userLeaseHolders(store: EphemeralStore, userId: string): Promise<string[]> {
  const keys = await store.keysWithPrefix(sessionLeasePrefix(userId));
  const holders = await Promise.all(keys.map((key) => store.get(key)));
  return [...new Set(holders.filter((runId): runId is string => runId !== null))];
}

/** A held lease: renewed in the background until released. */
export interface SessionLease {
  /** Stops renewing and frees the session (only if this run still holds it). Idempotent. */
  release(): Promise<void>;
  /**
   * Stops renewing and leaves the session locked for `holdMs` more (only if this run still
   * holds it): for whoever continues the run (a worker, a resume) to adopt with
   * {@link adoptSessionLease}. Idempotent; `release` afterwards does nothing.
   */
  handOver(holdMs: number): Promise<void>;
}

/**
 * One run per session at a time, across every replica: a key in the ephemeral store written
 * with `ifAbsent` and a TTL, holding the run id. A second invoke finds the key and is refused
 * (409 `session_busy`) before its stream starts, so two runs never interleave a conversation.
 *
 * The TTL bounds how long a crashed replica keeps a session locked; a live run renews it every
 * `ttlMs / 3`. Renewal is read-then-write (the port has no compare-and-set): it only writes
 * while the key still names this run, and a lease lost to expiry is not taken back.
 *
 * @returns the lease, or `null` when another run holds the session.
 */
export async function acquireSessionLease(
  store: EphemeralStore,
  userId: string,
  sessionId: string,
  runId: string,
  ttlMs: number = DEFAULT_LEASE_TTL_MS,
  onRenewError: (error: unknown) => void = () => {},
): Promise<SessionLease | null> {
  const key = sessionLeaseKey(userId, sessionId);
  if (!(await store.set(key, runId, { ifAbsent: true, ttlMs }))) return null;
  return heldLease(store, key, runId, ttlMs, onRenewError);
}

/**
 * Takes over the lease of a run that continues here (a background run a worker starts, a
 * suspended run resumed, a run taken over after its replica died): when the key still names
 * the run it is renewed from now on, when it expired it is taken again; `null` when another
 * run of the session holds it (the run cannot continue).
 */
export async function adoptSessionLease(
  store: EphemeralStore,
  userId: string,
  sessionId: string,
  runId: string,
  ttlMs: number = DEFAULT_LEASE_TTL_MS,
  onRenewError: (error: unknown) => void = () => {},
): Promise<SessionLease | null> {
  const key = sessionLeaseKey(userId, sessionId);
  const holder = await store.get(key);
  if (holder === runId) await store.set(key, runId, { ttlMs });
  else if (holder !== null || !(await store.set(key, runId, { ifAbsent: true, ttlMs }))) {
    return null;
  }
  return heldLease(store, key, runId, ttlMs, onRenewError);
}

function heldLease(
  store: EphemeralStore,
  key: string,
  runId: string,
  ttlMs: number,
  onRenewError: (error: unknown) => void,
): SessionLease {
  const renew = setInterval(
    () => {
      void (async () => {
        if ((await store.get(key)) === runId) await store.set(key, runId, { ttlMs });
      })().catch(onRenewError);
    },
    Math.max(1, Math.floor(ttlMs / 3)),
  );
  renew.unref();
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= (async () => {
        clearInterval(renew);
        if ((await store.get(key)) === runId) await store.delete(key);
      })()),
    handOver: (holdMs) =>
      (released ??= (async () => {
        clearInterval(renew);
        if ((await store.get(key)) === runId) await store.set(key, runId, { ttlMs: holdMs });
      })()),
  };
}

/** The run holding the session's lease, or `null`: tells whether a run is still alive. */
export function sessionLeaseHolder(
  store: EphemeralStore,
  userId: string,
  sessionId: string,
): Promise<string | null> {
  return store.get(sessionLeaseKey(userId, sessionId));
}

/** Frees the session when `runId` holds its lease (a suspended run that was cancelled). */
export async function releaseSessionLease(
  store: EphemeralStore,
  userId: string,
  sessionId: string,
  runId: string,
): Promise<void> {
  const key = sessionLeaseKey(userId, sessionId);
  if ((await store.get(key)) === runId) await store.delete(key);
}

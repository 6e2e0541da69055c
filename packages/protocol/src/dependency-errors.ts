/**
 * Socket errors of a connection to a dependency (Node's `code`). `ETIMEDOUT` is also the code of
 * the store's `QueryTimeoutError` (PostgreSQL did not answer within `DATABASE_QUERY_TIMEOUT_MS`).
 */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * PostgreSQL SQLSTATEs of a server going away or not yet there: class 08 (connection exception),
 * 57P01 `admin_shutdown` (the backend was terminated: a restart or `pg_terminate_backend`),
 * 57P02 `crash_shutdown`, 57P03 `cannot_connect_now` (starting up).
 */
const PG_UNAVAILABLE = /^(08...|57P0[123])$/;

/**
 * Messages of `pg` and ioredis when their connection ended under a query or command, and of
 * Redis and ioredis while a Redis Cluster or Sentinel group fails over: a master's slots
 * unserved (`CLUSTERDOWN`, `TRYAGAIN`; ioredis gives up with "Too many Cluster redirections"
 * when they last longer than its redirections), a replica not yet promoted (`READONLY`,
 * `MASTERDOWN`), a restarted server loading (`LOADING`), no node reachable for the slot map.
 */
const CLIENT_MESSAGES = [
  'Connection terminated',
  'Connection is closed',
  'Reached the max retries per request limit',
  'Command timed out',
  'Too many Cluster redirections',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'READONLY',
  'MASTERDOWN',
  'LOADING',
  'Failed to refresh slots cache',
  'None of startup nodes is available',
  "Cluster isn't ready",
];

/**
 * Whether an unexpected error only says that Redis or PostgreSQL could not be reached (dropped,
 * restarting, refusing connections). The error middleware answers those with 503 `unavailable`
 * (retry shortly) instead of 500 `internal_error` (a bug), so a caller during an outage can tell
 * the two apart (found by tests/faults: a sync during a PostgreSQL restart got a 500).
 */
export function isDependencyUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || PG_UNAVAILABLE.test(code)))
    return true;
  return typeof message === 'string' && CLIENT_MESSAGES.some((m) => message.startsWith(m));
}

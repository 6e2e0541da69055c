import type { TypedEmitter } from '../typed-emitter.js';

/** Polls `check` until it returns something other than undefined/false, or fails at the deadline. */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves with the next `event` of `emitter`, or fails at the deadline. */
export function nextEvent<E extends object, K extends keyof E>(
  emitter: TypedEmitter<E>,
  event: K,
  timeoutMs = 5_000,
): Promise<E[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out waiting for event ${String(event)}`));
    }, timeoutMs);
    const off = emitter.once(event, (payload) => {
      clearTimeout(timer);
      resolve(payload);
    });
  });
}

/** Records every payload of `event`. */
export function record<E extends object, K extends keyof E>(
  emitter: TypedEmitter<E>,
  event: K,
): E[K][] {
  const seen: E[K][] = [];
  emitter.on(event, (payload) => seen.push(payload));
  return seen;
}

const HANDLE_KINDS = ['Timeout', 'TCPSocketWrap', 'TCPServerWrap'];

/** Counts of the resources that keep a process alive after a client is done: timers, sockets. */
export function openHandles(): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(HANDLE_KINDS.map((k) => [k, 0]));
  for (const kind of process.getActiveResourcesInfo())
    if (kind in counts) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/**
 * The handle counts once earlier tests' sockets are gone and the counts stopped moving, so a
 * handle that vanishes later cannot hide one that a test leaks.
 */
export async function settledHandles(): Promise<Record<string, number>> {
  let last = JSON.stringify(openHandles());
  return waitFor(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const now = openHandles();
      const same = JSON.stringify(now) === last;
      last = JSON.stringify(now);
      // Stable, not zero: a harness may hold long-lived connections of its own (e.g. Redis).
      return same ? now : undefined;
    },
    'handles to settle',
    3_000,
  );
}

/** Waits until no kind of handle is above its count in `before`. */
export async function expectHandlesBackTo(before: Record<string, number>): Promise<void> {
  await waitFor(
    () => HANDLE_KINDS.every((k) => (openHandles()[k] ?? 0) <= (before[k] ?? 0)),
    `handles back to ${JSON.stringify(before)}, now ${JSON.stringify(openHandles())}`,
    3_000,
  );
}

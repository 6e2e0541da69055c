/**
 * Calls `onAbort` once when `signal` aborts (at once if it already has); returns a function
 * that removes the listener, so long-lived signals do not collect one listener per wait.
 */
export function waitForSignal(signal: AbortSignal | undefined, onAbort: () => void): () => void {
  if (!signal) return () => {};
  if (signal.aborted) {
    queueMicrotask(onAbort);
    return () => {};
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** Longest wait between two attempts of a call. */
const MAX_BACKOFF_MS = 5_000;

/** `Retry-After` (seconds, or an HTTP date) in milliseconds from now. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Wait before attempt `n + 1`. */
export function backoff(attempt: number): number {
  return Math.min(MAX_BACKOFF_MS, 200 * 2 ** attempt);
}

/** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

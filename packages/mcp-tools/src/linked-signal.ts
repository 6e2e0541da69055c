/**
 * Runs `work` with a signal of its own that follows `parent`, detaching from `parent` when done.
 * Calls made with a run's signal directly leave listeners on it (the SDK's, `AbortSignal.any`'s)
 * until it is collected; a run with many tool calls would pile them up on one long-lived signal.
 */
export async function withLinkedSignal<T>(
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) onAbort();
  else parent.addEventListener('abort', onAbort, { once: true });
  try {
    return await work(controller.signal);
  } finally {
    parent.removeEventListener('abort', onAbort);
  }
}

/**
 * Runs `task` every `intervalMs`, never two at once (a tick while the previous run is still
 * going is skipped); a run that throws is reported to `onError` and retried at the next tick.
 * The timer does not keep the process alive. Returns the stop function, which waits for a run
 * in progress.
 */
export function startPeriodic(
  intervalMs: number,
  task: () => Promise<void>,
  onError: (error: unknown) => void,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = task()
      .catch(onError)
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

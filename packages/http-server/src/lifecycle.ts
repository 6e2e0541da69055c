import type { Logger } from '@agent-backend/logger';

export interface ShutdownOptions {
  logger: Logger;
  /** Steps run in order on SIGTERM/SIGINT: stop accepting, drain, then close engines. */
  steps: Array<{ name: string; run: () => Promise<unknown> }>;
  /** After this long the process exits even if a step hangs. */
  timeoutMs: number;
  /** For tests; defaults to `process.exit`. */
  exit?: (code: number) => void;
}

/**
 * Installs SIGTERM and SIGINT handlers that run the shutdown steps once, in order, and exit 0
 * (1 if a step failed or the timeout hit). A second signal does not start a second shutdown.
 * Returns the shutdown function so an entry point can also call it itself.
 */
export function handleShutdown(options: ShutdownOptions): () => Promise<void> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let running: Promise<void> | undefined;
  const shutdown = () => {
    running ??= (async () => {
      options.logger.info({ steps: options.steps.map((s) => s.name) }, 'shutting down');
      const timer = setTimeout(() => {
        options.logger.error({ timeoutMs: options.timeoutMs }, 'shutdown timed out; exiting');
        exit(1);
      }, options.timeoutMs);
      timer.unref();
      let failed = false;
      for (const step of options.steps) {
        try {
          await step.run();
        } catch (error) {
          failed = true;
          options.logger.error({ err: error, step: step.name }, 'shutdown step failed');
        }
      }
      clearTimeout(timer);
      options.logger.info('stopped');
      exit(failed ? 1 : 0);
    })();
    return running;
  };
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  return shutdown;
}

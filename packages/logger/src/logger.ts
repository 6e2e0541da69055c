import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { redactSecrets } from './redact.js';

export type { Logger } from 'pino';

export interface CreateLoggerOptions {
  /** pino level. @default 'info' */
  level?: string;
  /** Bound to every line, e.g. `{ role: 'api', instance: 'api-1' }`. */
  base?: Record<string, unknown>;
  /** Where lines go. @default stdout */
  destination?: DestinationStream;
}

/**
 * A structured JSON logger whose every line passes through {@link redactSecrets}: secrets are
 * removed by key at any depth and from URLs, so no call site has to remember to do it.
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const config: LoggerOptions = {
    level: options.level ?? 'info',
    base: { pid: process.pid, ...options.base },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      log: (object) => redactSecrets(object) as Record<string, unknown>,
    },
    // pino serializes `err` itself; keep message, stack and code, redacted by the formatter above.
    serializers: { err: pino.stdSerializers.err },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

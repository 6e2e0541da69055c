import { trace, type Span } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { loadPrettyStream, PRETTY_LOGS_UNAVAILABLE } from './pretty-stream.js';
import { redactSecrets } from './redact.js';

export type { Logger } from 'pino';

export interface CreateLoggerOptions {
  /** pino level. @default 'info' */
  level?: string;
  /** Bound to every line, e.g. `{ role: 'api', instance: 'api-1' }`. */
  base?: Record<string, unknown>;
  /** Where lines go. @default stdout */
  destination?: DestinationStream;
  /**
   * `json` (one object per line, for collectors) or `pretty` (pino-pretty: coloured, one
   * readable line per entry, for a person at a terminal). pino-pretty is a development
   * dependency: where it is not installed, `pretty` writes JSON lines, the first of them a
   * warning that says so (`code: 'pretty_logs_unavailable'`). @default 'json'
   */
  format?: 'json' | 'pretty';
  /**
   * Add `trace_id` and `span_id` of the active OpenTelemetry span to every line written while
   * one is active. Only when tracing is on: off, no hook runs per line. @default false
   */
  traceIds?: boolean;
}

/**
 * A span's ids as the fields of a log line (`trace_id`, `span_id`); nothing without a span.
 * For lines written outside the span's context, such as the request line written when the
 * response closes.
 */
export function traceFields(span: Span | undefined): Record<string, string> {
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** The active span's ids, for every log line (nothing when no span is active). */
function traceMixin(): Record<string, string> {
  return traceFields(trace.getActiveSpan());
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
    ...(options.traceIds ? { mixin: traceMixin } : {}),
  };
  if (options.format === 'pretty') {
    // The lines it formats have passed the redaction above.
    const pretty = loadPrettyStream(options.destination);
    if (pretty) return pino(config, pretty);
    const logger = options.destination ? pino(config, options.destination) : pino(config);
    logger.warn({ code: 'pretty_logs_unavailable' }, PRETTY_LOGS_UNAVAILABLE);
    return logger;
  }
  return options.destination ? pino(config, options.destination) : pino(config);
}

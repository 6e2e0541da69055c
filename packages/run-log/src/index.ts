/**
 * The run log port and its adapters: every event of an agent run, readable from any replica for
 * a retention window, so a dropped SSE stream can be resumed with `Last-Event-ID`.
 */
export {
  type AppendOptions,
  DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS,
  DEFAULT_RUN_LOG_RETENTION_MS,
  type ReadOptions,
  type RunLog,
  type RunLogEntry,
  type RunLogInfo,
  type RunLogOptions,
} from './run-log.js';
export { RunLogClosedError, RunLogSequenceError } from './errors.js';
export { createMemoryRunLog } from './memory-run-log.js';
export { createRedisRunLog, type RedisRunLogOptions } from './redis-run-log.js';
export { RunLogWriter, type SequencedEvent } from './run-log-writer.js';

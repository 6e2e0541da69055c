export { createLogger, traceFields, type CreateLoggerOptions, type Logger } from './logger.js';
export { redactSecrets, redactUrl, isSecretKey, REDACTED } from './redact.js';

export { startTracing, type StartTracingOptions, type Tracing } from './start-tracing.js';

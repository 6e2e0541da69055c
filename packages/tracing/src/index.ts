export { startTracing, type StartTracingOptions, type Tracing } from './start-tracing.js';
export { createSampler, type TracesSamplerName } from './sampler.js';

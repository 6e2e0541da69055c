export * from './instruments.js';
export { createServiceMetrics, type CreateMetricsOptions } from './service-metrics.js';

export * from './instruments.js';
export {
  createServiceMetrics,
  METRIC_PREFIX,
  type CreateMetricsOptions,
} from './service-metrics.js';

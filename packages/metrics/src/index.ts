export * from './instruments.js';
export {
  createServiceMetrics,
  MAX_MODEL_LABELS,
  OTHER_MODEL,
  METRIC_PREFIX,
  type CreateMetricsOptions,
} from './service-metrics.js';

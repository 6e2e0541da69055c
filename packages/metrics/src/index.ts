export * from './instruments.js';
export {
  createServiceMetrics,
  MAX_MODEL_LABELS,
  OTHER_MODEL,
  type CreateMetricsOptions,
} from './service-metrics.js';

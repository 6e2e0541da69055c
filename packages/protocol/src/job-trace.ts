import { z } from 'zod';

/**
 * The W3C trace context (`traceparent`, `tracestate`) a job carries in its data as `trace`, so
 * the worker's span continues the trace of the request that queued the job. Optional in every
 * job: jobs without it (tracing off, or queued by the service itself) stay valid. Bounded: a
 * carrier has two short headers.
 */
export const JobTraceContext = z
  .record(z.string().max(64), z.string().max(1024))
  .refine((carrier) => Object.keys(carrier).length <= 8, 'at most 8 entries');
export type JobTraceContext = z.infer<typeof JobTraceContext>;

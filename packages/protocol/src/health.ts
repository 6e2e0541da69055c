import { z } from 'zod';

/** 200 answer of `GET /healthz`: the process is alive (no dependency is asked). */
export const HealthResponse = z.object({
  status: z.literal('ok'),
});
export type HealthResponse = z.infer<typeof HealthResponse>;

/** One dependency behind `GET /readyz`; `error` says why it is not ready. */
export const ReadinessCheckResult = z.object({
  ok: z.boolean(),
  error: z.string().optional(),
});
export type ReadinessCheckResult = z.infer<typeof ReadinessCheckResult>;

/**
 * Answer of `GET /readyz`: 200 `ready` when every dependency answered (Redis, PostgreSQL or
 * PGlite, as configured), 503 `not_ready` otherwise.
 */
export const ReadinessResponse = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.record(z.string(), ReadinessCheckResult),
});
export type ReadinessResponse = z.infer<typeof ReadinessResponse>;

import { operatorCredential, type HttpServer } from '@agent-backend/http-server';
import type { ServiceMetrics } from '@agent-backend/metrics';

/**
 * `GET /metrics`: this instance's registry in the Prometheus text format. With `token`
 * (`METRICS_TOKEN`) it requires `Authorization: Bearer <token>` (401 otherwise), so a scraper
 * holds an operator credential, never a user's.
 */
export function registerMetricsRoute(
  app: HttpServer,
  metrics: ServiceMetrics,
  token: string | undefined,
): void {
  const check = token ? operatorCredential('metrics', token, 'bearer', 'metrics') : undefined;
  app.get('/metrics', { ...(check ? { onRequest: check } : {}) }, async (_request, reply) => {
    const { contentType, body } = await metrics.render();
    reply.statusCode = 200;
    reply.setHeader('content-type', contentType);
    reply.setHeader('cache-control', 'no-store');
    reply.end(body);
  });
}

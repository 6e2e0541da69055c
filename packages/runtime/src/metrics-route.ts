import { operatorCredential, type HttpServer, type RouteDocs } from '@agent-backend/http-server';
import type { ServiceMetrics } from '@agent-backend/metrics';

const METRICS_DOC: RouteDocs = {
  tag: 'health',
  summary: 'Prometheus metrics of this replica',
  description:
    'Off (404) with `METRICS_ENABLED=false`, and on this port when `METRICS_PORT` moves it to a ' +
    'port of its own (same path and credential there). With `METRICS_TOKEN` set it needs ' +
    '`Authorization: Bearer <METRICS_TOKEN>` (an operator credential, never a user token) and ' +
    'answers 401 otherwise. The metrics are listed in docs/operations.md.',
  // Whether a hook runs depends on `METRICS_TOKEN`; the document shows the credential.
  auth: 'metrics',
  responses: {
    200: { description: 'The metrics.', text: 'Prometheus text exposition format 0.0.4' },
  },
  errors: ['unauthorized', 'not_found'],
};

/**
 * `GET /metrics`: this instance's registry in the Prometheus text format. With `token`
 * (`METRICS_TOKEN`) it requires `Authorization: Bearer <token>` (401 otherwise), so a scraper
 * holds an operator credential, never a user's. With the metrics off, or on the listener of
 * `METRICS_PORT` instead, it is not served here (the ordinary 404), only documented.
 */
export function registerMetricsRoute(
  app: HttpServer,
  metrics: ServiceMetrics,
  token: string | undefined,
  where: {
    /** Served on the `METRICS_PORT` listener instead: documented here, 404. */ elsewhere?: boolean;
  } = {},
): void {
  const check = token ? operatorCredential('metrics', token, 'bearer', 'metrics') : undefined;
  const options = {
    ...(check ? { onRequest: check } : {}),
    doc: METRICS_DOC,
    enabled: metrics.enabled && !where.elsewhere,
  };
  app.get('/metrics', options, async (_request, reply) => {
    const { contentType, body } = await metrics.render();
    reply.statusCode = 200;
    reply.setHeader('content-type', contentType);
    reply.setHeader('cache-control', 'no-store');
    reply.end(body);
  });
}

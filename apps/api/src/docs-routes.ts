import type { Response } from 'express';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  renderDocsPage,
} from '@agent-backend/api-docs';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `GET /openapi.json` (HTTP API, OpenAPI 3.1), `GET /asyncapi.json` (WebSocket protocol,
 * AsyncAPI 3.0) and `GET /docs` (a page showing both, loading nothing from outside the
 * service). No authentication: they describe the API, not anyone's data. Each is built from the
 * protocol schemas on its first request and kept.
 */
export function registerDocsRoutes({ app }: Pick<ServiceContext, 'app'>): void {
  const serve = (path: string, type: string, build: () => string) => {
    let body: string | undefined;
    app.get(path, (_request, reply) => send(reply, type, (body ??= build())));
  };
  serve('/openapi.json', 'application/json', () => JSON.stringify(buildOpenApiDocument()));
  serve('/asyncapi.json', 'application/json', () => JSON.stringify(buildAsyncApiDocument()));
  serve('/docs', 'text/html', renderDocsPage);
}

function send(reply: Response, type: string, body: string): void {
  reply.setHeader('content-type', `${type}; charset=utf-8`);
  reply.setHeader('cache-control', 'no-cache');
  reply.end(body);
}

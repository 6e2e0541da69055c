import type { Response } from 'express';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  renderDocsPage,
} from '@agent-backend/api-docs';
import { inlineSourceHash, pageHeaders, type RouteDocs } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `GET /openapi.json` (HTTP API, OpenAPI 3.1), `GET /asyncapi.json` (WebSocket protocol,
 * AsyncAPI 3.0) and `GET /docs` (a page showing both, loading nothing from outside the
 * service). No authentication: they describe the API, not anyone's data. Each is built on its
 * first request and kept: the OpenAPI document from the routes registered on this server with
 * their documentation (every route is registered before the server listens), the AsyncAPI one
 * from the protocol schemas. The page has the service's page policy with its one inline script
 * and stylesheet allowed by hash, and no other.
 */
export function registerDocsRoutes({ app }: Pick<ServiceContext, 'app'>): void {
  const serve = (
    path: string,
    type: string,
    doc: RouteDocs,
    build: () => { body: string; headers?: Record<string, string> },
  ) => {
    let built: ReturnType<typeof build> | undefined;
    app.get(path, { doc }, (_request, reply) => send(reply, type, (built ??= build())));
  };
  serve(
    '/openapi.json',
    'application/json',
    {
      tag: 'documents',
      summary: 'This document (OpenAPI 3.1)',
      responses: { 200: { description: 'The OpenAPI document.', anyJson: true } },
    },
    () => ({ body: JSON.stringify(buildOpenApiDocument(app.documented())) }),
  );
  serve(
    '/asyncapi.json',
    'application/json',
    {
      tag: 'documents',
      summary: 'The WebSocket protocol (AsyncAPI 3.0)',
      responses: { 200: { description: 'The AsyncAPI document.', anyJson: true } },
    },
    () => ({ body: JSON.stringify(buildAsyncApiDocument()) }),
  );
  serve(
    '/docs',
    'text/html',
    {
      tag: 'documents',
      summary: 'A page that shows both documents',
      description:
        'Self-contained: it loads nothing from outside the service. Served with a strict ' +
        'Content-Security-Policy (its one inline script and stylesheet allowed by hash) and no ' +
        "framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`).",
      responses: { 200: { description: 'The page.', html: true } },
    },
    () => {
      const page = renderDocsPage();
      return {
        body: page.html,
        headers: pageHeaders({
          'script-src': inlineSourceHash(page.script),
          'style-src': inlineSourceHash(page.style),
        }),
      };
    },
  );
}

function send(
  reply: Response,
  type: string,
  { body, headers = {} }: { body: string; headers?: Record<string, string> },
): void {
  for (const [name, value] of Object.entries(headers)) reply.setHeader(name, value);
  reply.setHeader('content-type', `${type}; charset=utf-8`);
  reply.setHeader('cache-control', 'no-cache');
  reply.end(body);
}

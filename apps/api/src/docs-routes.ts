import type { Response } from 'express';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  renderDocsPage,
} from '@agent-backend/api-docs';
import { inlineSourceHash, pageHeaders } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * `GET /openapi.json` (HTTP API, OpenAPI 3.1), `GET /asyncapi.json` (WebSocket protocol,
 * AsyncAPI 3.0) and `GET /docs` (a page showing both, loading nothing from outside the
 * service). No authentication: they describe the API, not anyone's data. Each is built from the
 * protocol schemas on its first request and kept. The page has the service's page policy with
 * its one inline script and stylesheet allowed by hash, and no other.
 */
export function registerDocsRoutes({ app }: Pick<ServiceContext, 'app'>): void {
  const serve = (
    path: string,
    type: string,
    build: () => { body: string; headers?: Record<string, string> },
  ) => {
    let built: ReturnType<typeof build> | undefined;
    app.get(path, (_request, reply) => send(reply, type, (built ??= build())));
  };
  serve('/openapi.json', 'application/json', () => ({
    body: JSON.stringify(buildOpenApiDocument()),
  }));
  serve('/asyncapi.json', 'application/json', () => ({
    body: JSON.stringify(buildAsyncApiDocument()),
  }));
  serve('/docs', 'text/html', () => {
    const page = renderDocsPage();
    return {
      body: page.html,
      headers: pageHeaders({
        'script-src': inlineSourceHash(page.script),
        'style-src': inlineSourceHash(page.style),
      }),
    };
  });
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

import type { Request, Response } from 'express';
import { HealthResponse, ReadinessResponse } from '@agent-backend/protocol';
import type { RouteDocs } from './route-doc.js';

/** Where the routes go: `HttpServer` (its `get`), without importing the server. */
interface RouteRegistrar {
  get(
    path: string,
    options: { doc: RouteDocs },
    handler: (request: Request, reply: Response) => unknown,
  ): void;
}

/** Resolves when the dependency answers; rejects (or times out) when it does not. */
export type ReadinessCheck = () => Promise<unknown>;

/** A readiness check that has not answered within this long counts as failed. */
const CHECK_TIMEOUT_MS = 2_000;

const HEALTHZ_DOC: RouteDocs = {
  tag: 'health',
  summary: 'Liveness: the process answers',
  responses: { 200: { description: 'Alive.', json: HealthResponse } },
};

const READYZ_DOC: RouteDocs = {
  tag: 'health',
  summary: 'Readiness: every dependency answers',
  responses: {
    200: { description: 'Ready.', json: ReadinessResponse },
    503: {
      description: 'A dependency failed or did not answer within 2 s.',
      json: ReadinessResponse,
    },
  },
};

/**
 * `GET /healthz`: the process is alive (no dependency is touched, so a Redis outage does not get
 * every replica restarted). `GET /readyz`: every dependency answered; 503 with the failing
 * check's error otherwise, so a load balancer stops sending traffic.
 */
export function registerHealthRoutes(
  app: RouteRegistrar,
  checks: Record<string, ReadinessCheck>,
): void {
  app.get(
    '/healthz',
    { doc: HEALTHZ_DOC },
    async () => ({ status: 'ok' }) satisfies HealthResponse,
  );
  app.get('/readyz', { doc: READYZ_DOC }, async (_request, reply) => {
    const results = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            check(),
            new Promise((_, reject) => {
              timer = setTimeout(
                () => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)),
                CHECK_TIMEOUT_MS,
              );
            }),
          ]);
          return [name, { ok: true }] as const;
        } catch (error) {
          return [name, { ok: false, error: (error as Error).message }] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    const ready = results.every(([, result]) => result.ok);
    const answer: ReadinessResponse = {
      status: ready ? 'ready' : 'not_ready',
      checks: Object.fromEntries(results),
    };
    reply.status(ready ? 200 : 503).json(answer);
  });
}

import type { Request, Response } from 'express';
import type { HealthResponse, ReadinessResponse } from '@agent-backend/protocol';

/** Where the routes go: `HttpServer` (its `get`), without importing the server. */
interface RouteRegistrar {
  get(path: string, handler: (request: Request, reply: Response) => unknown): void;
}

/** Resolves when the dependency answers; rejects (or times out) when it does not. */
export type ReadinessCheck = () => Promise<unknown>;

/** A readiness check that has not answered within this long counts as failed. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * `GET /healthz`: the process is alive (no dependency is touched, so a Redis outage does not get
 * every replica restarted). `GET /readyz`: every dependency answered; 503 with the failing
 * check's error otherwise, so a load balancer stops sending traffic.
 */
export function registerHealthRoutes(
  app: RouteRegistrar,
  checks: Record<string, ReadinessCheck>,
): void {
  app.get('/healthz', async () => ({ status: 'ok' }) satisfies HealthResponse);
  app.get('/readyz', async (_request, reply) => {
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

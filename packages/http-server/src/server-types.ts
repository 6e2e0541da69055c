import type { Server } from 'node:http';
import type { Express, RequestHandler } from 'express';
import type { Tracer } from '@opentelemetry/api';
import type { Logger } from '@agent-backend/logger';
import type { ReadinessCheck } from './health.js';
import type { DocumentedRoute, RouteDocs } from './route-doc.js';
import type { MountOptions, RegisteredMount, RegisteredRoute, Register } from './route-types.js';

export interface CreateHttpServerOptions {
  logger: Logger;
  /** Named checks behind `GET /readyz` (e.g. `redis`, `postgres`). */
  readiness?: Record<string, ReadinessCheck>;
  /** Maximum JSON body size in bytes; larger bodies get 413. @default 1 MiB */
  bodyLimit?: number;
  /**
   * Called once per answered request (when its log line is written) with the route template
   * that matched (`/api/knowledge-bases/:id`, a {@link HttpServer.mount} prefix) or
   * `undefined`, and the duration in seconds. Absent: nothing is measured.
   */
  observe?: (method: string, route: string | undefined, status: number, seconds: number) => void;
  /**
   * A span per request from this tracer (server kind, named `<METHOD> <route template>`,
   * continuing an incoming W3C `traceparent`), active while the request is handled, so its log
   * lines and the spans it starts belong to it. Absent: no tracing step runs at all.
   */
  tracer?: Tracer;
  /**
   * Origins (exactly `scheme://host[:port]`) whose pages may call every route cross-origin:
   * preflights answered, `Access-Control-Allow-Origin` on every answer to them, no credentials
   * mode (see cors.ts). Empty or absent: no CORS header at all.
   */
  corsOrigins?: readonly string[];
  /**
   * Proxies in front of the service whose `X-Forwarded-For` entries are believed for
   * `request.ip` (Express's `trust proxy` as a hop count). 0 or absent: the TCP peer's address.
   */
  trustProxy?: number;
}

/**
 * The service's HTTP server: Express 5 with the service's conventions. Routes are registered
 * through {@link HttpServer.get} and friends (JSON answers from return values, the error shape of
 * {@link AppError}); `express` is the Express application, for the middleware an operator
 * already runs: added with {@link HttpServer.use} it runs before every route; added to `express`
 * itself (`express.use(...)`) it runs, as in any Express application, for the requests no route
 * or mount of the service answered, and what it passes on is the JSON 404 (or its error's answer).
 */
export interface HttpServer {
  readonly express: Express;
  readonly server: Server;
  /** Middleware run before every route (after the request id and the log line are set up). */
  use(...handlers: RequestHandler[]): void;
  /**
   * Serves the files of `dir` under `mountPath` (a {@link HttpServer.mount}: GET and HEAD;
   * `index.html` for the directory itself; a missing file falls through to the routes, then the
   * JSON 404), with `headers` on every file answered, and documented with `doc`.
   */
  serveStatic(
    mountPath: string,
    dir: string,
    headers?: Record<string, string>,
    doc?: RouteDocs,
  ): void;
  /**
   * Hands every request whose path is `prefix` or below it (`/admin/queues`,
   * `/admin/queues/static/app.js`) to `handlers`, as Express's `use(prefix, ...)` does
   * (`req.url` relative to the prefix, `req.baseUrl` the prefix), before the service's routes;
   * what the handlers pass on goes to the routes, then the 404. Other requests pay one string
   * comparison per mount. The request's route label is the prefix. With `options.onRequest`,
   * every request under the prefix is authenticated first (what it throws is the answer).
   */
  mount(prefix: string, ...handlers: RequestHandler[]): void;
  mount(prefix: string, options: MountOptions, ...handlers: RequestHandler[]): void;
  get: Register;
  post: Register;
  put: Register;
  patch: Register;
  delete: Register;
  /**
   * Every route served, registered so far, in registration order (the health routes first); not
   * the ones registered with `enabled: false` ({@link HttpServer.documented} lists those too).
   */
  routes(): RegisteredRoute[];
  /** Every {@link HttpServer.mount} served so far (static files included), in order. */
  mounts(): RegisteredMount[];
  /**
   * Every route and mount registered with a `doc` so far, served or not (`enabled: false`), in
   * registration order (the health routes first): what the API documents are built from.
   */
  documented(): DocumentedRoute[];
  /**
   * `preClose`: when closing starts, once the server stopped accepting connections (drain or
   * end long streams here: the server is closed once they end); `onClose`: once every
   * connection is done.
   */
  addHook(name: 'preClose' | 'onClose', hook: () => unknown): void;
  /** Listens; resolves with `http://host:port`. */
  listen(options: { port: number; host: string }): Promise<string>;
  /** Stops accepting, answers 503 to requests on open connections, waits for the ones in flight. */
  close(): Promise<void>;
}

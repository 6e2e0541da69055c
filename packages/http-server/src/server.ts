import { randomUUID } from 'node:crypto';
import type * as Http from 'node:http';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { redactUrl, traceFields } from '@agent-backend/logger';
import {
  answerClientError,
  errorBody,
  sendError,
  sendJson,
  sendNotFound,
} from './error-answers.js';
import { applyCors } from './cors.js';
import { registerHealthRoutes } from './health.js';
import type { CreateHttpServerOptions, HttpServer } from './server-types.js';
import type { RouteAuth } from './route-auth.js';
import type { DocumentedRoute } from './route-doc.js';
import { hook, routeChain, type RouteMethod } from './route-chain.js';
import { mountFor, RouteTable } from './route-table.js';
import type {
  MountOptions,
  RegisteredRoute,
  Register,
  RouteHandler,
  RouteOptions,
} from './route-types.js';
import { requestSpan, traceRequests } from './trace-requests.js';

// Node's http as its CommonJS object, not `import ... from 'node:http'`: an ES import of it reads
// every export, and its lazy `WebSocket`, `CloseEvent` and `MessageEvent` load Node's bundled
// undici, ~5 MB resident in a process that never uses fetch (docs/BENCHMARKS.md, "Footprint").
// `createRequire`, not `process.getBuiltinModule`, which Node 22 has only since 22.3.
const { createServer, IncomingMessage, ServerResponse } = createRequire(import.meta.url)(
  'node:http',
) as typeof Http;

export { REJECTED_BODY_DRAIN } from './body-reader.js';
export type { CreateHttpServerOptions, HttpServer } from './server-types.js';
export type {
  KnownAfter,
  MountOptions,
  RegisteredMount,
  RegisteredRoute,
  RegisterWith,
  RouteHandler,
  RouteOptions,
  RouteRequest,
} from './route-types.js';

/** Accept a caller's request id only if it is short and printable, so it cannot forge log lines. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * An HTTP server with the service's conventions: a request id per request (taken from
 * `X-Request-Id` or generated, and echoed back), exactly one log line per request through
 * pino-http (with secret query parameters removed from the URL), the error body shape of
 * {@link AppError} for every answer (404, bad JSON, wrong media type, oversized bodies, malformed
 * URLs, and the HTTP parser's own refusals), `/healthz` + `/readyz`, and a graceful close.
 */
export function createHttpServer(options: CreateHttpServerOptions): HttpServer {
  const { logger } = options;
  const defaultLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = express();
  app.disable('x-powered-by');
  // A JSON API: no ETags (and so no 304s) on answers that change with every call.
  app.set('etag', false);
  // Unset, Express ignores X-Forwarded-For: a client cannot choose its own address.
  if (options.trustProxy) app.set('trust proxy', options.trustProxy);
  // Express's last step: what no route of ours and no middleware added to `express` answered is
  // the JSON 404, and an error nothing else answered is answered in the service's shape.
  const finish = (req: Request, res: Response) => (error?: unknown) => {
    if (error) sendError(error, req, res);
    else sendNotFound(req, res);
  };
  const server = createServer(
    {
      IncomingMessage: withPrototype(IncomingMessage, app.request),
      ServerResponse: withPrototype(ServerResponse, app.response),
    },
    (req, res) => app(req as Request, res as Response, finish(req as Request, res as Response)),
  );
  let closing = false;

  const before = express.Router();
  let hasMiddleware = false;
  const routes = new RouteTable();
  const registered: RegisteredRoute[] = [];
  const documented: DocumentedRoute[] = [];
  const mounts: Array<{ prefix: string; auth: RouteAuth; router: express.Router }> = [];
  const { observe } = options;
  const corsOrigins = new Set(options.corsOrigins ?? []);
  if (options.tracer) app.use(traceRequests(options.tracer));
  // One middleware in front of everything (each Express layer costs a router step): the request
  // id, the request's log line, the 503 while closing, the operator's middleware, the routes.
  // A request no route matches goes on (`next()`) to what was added to `express` after it.
  app.use((req, res, next) => {
    res.locals.startedAt = performance.now();
    const header = req.headers['x-request-id'];
    const id = typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
    req.id = id;
    req.log = logger;
    res.setHeader('x-request-id', id);
    // One line per request, written when the response is done: `close` follows `finish`, and
    // comes alone when the connection was cut short.
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      // Written on `close`, outside the request span's context: its ids are added here.
      const line = { reqId: id, ...requestLine(req, res), ...traceFields(requestSpan(res)) };
      if (res.statusCode >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
      if (observe) {
        const seconds = (performance.now() - (res.locals.startedAt as number)) / 1000;
        observe(req.method, res.locals.route as string | undefined, res.statusCode, seconds);
      }
    };
    res.once('close', done);
    // Before everything that answers, so every answer (errors and the 503 included) carries it.
    if (corsOrigins.size > 0 && applyCors(corsOrigins, req, res)) return;
    if (closing) {
      res.setHeader('connection', 'close');
      sendJson(res, 503, errorBody('unavailable', 'the server is shutting down'));
      return;
    }
    const dispatch = (error?: unknown) => {
      if (error) return next(error);
      if (mounts.length > 0) {
        const mounted = mountFor(mounts, req.url);
        if (mounted) {
          res.locals.route = mounted.prefix;
          // What the mount does not answer (a file that is not there) goes on to the routes.
          mounted.router(req, res, (mountError?: unknown) =>
            mountError ? next(mountError) : routes.dispatch(req, res, next),
          );
          return;
        }
      }
      routes.dispatch(req, res, next);
    };
    if (hasMiddleware) before(req, res, dispatch);
    else dispatch();
  });

  // The HTTP parser's refusals (headers too large, malformed requests, timeouts) never reach
  // Express: answer them on the socket, in the same shape.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) =>
    answerClientError(error, socket, logger),
  );

  const preClose: Array<() => unknown> = [];
  const onClose: Array<() => unknown> = [];
  let closed: Promise<void> | undefined;

  const register = (method: RouteMethod): Register =>
    ((path: string, second: RouteOptions | RouteHandler, third?: RouteHandler) => {
      const routeOptions = typeof second === 'function' ? {} : second;
      const handler = typeof second === 'function' ? second : third!;
      const { chain, route } = routeChain(method, path, routeOptions, handler, defaultLimit);
      const { doc, enabled = true } = routeOptions;
      if (doc) {
        const { body, params, query } = route;
        documented.push({
          ...doc,
          method: route.method,
          path,
          auth: doc.auth ?? route.auth,
          enabled,
          ...(routeOptions.limit
            ? { errors: [...new Set([...(doc.errors ?? []), 'rate_limited' as const])] }
            : {}),
          ...(body ? { body } : {}),
          ...(params ? { params } : {}),
          ...(query ? { query } : {}),
        });
      }
      if (!enabled) return;
      routes.add(method, path, chain);
      registered.push(route);
    }) as Register;

  const http: HttpServer = {
    express: app,
    server,
    use: (...handlers) => {
      before.use(...handlers);
      hasMiddleware = true;
    },
    serveStatic(mountPath, dir, headers = {}, doc) {
      http.mount(
        mountPath,
        doc ? { doc } : {},
        express.static(dir, {
          index: 'index.html',
          // `/playground` → `/playground/`, so the page's relative URLs resolve under it.
          redirect: true,
          dotfiles: 'ignore',
          setHeaders: (res) => {
            res.setHeader('cache-control', 'no-cache');
            for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
          },
        }),
      );
    },
    mount: (prefix: string, first?: MountOptions | RequestHandler, ...rest: RequestHandler[]) => {
      if (!/^\/[^?#]*[^/?#]$/.test(prefix)) throw new Error(`invalid mount prefix: ${prefix}`);
      const mountOptions = typeof first === 'object' ? first : {};
      const handlers = typeof first === 'function' ? [first, ...rest] : rest;
      const { onRequest, doc, enabled = true } = mountOptions;
      const auth = onRequest?.auth ?? 'none';
      if (doc) {
        documented.push({
          ...doc,
          method: 'GET',
          path: prefix,
          mount: true,
          auth: doc.auth ?? auth,
          enabled,
        });
      }
      if (!enabled) return;
      const router = express.Router();
      router.use(prefix, ...(onRequest ? [hook(onRequest)] : []), ...handlers);
      mounts.push({ prefix, auth, router });
    },
    get: register('get'),
    post: register('post'),
    put: register('put'),
    patch: register('patch'),
    delete: register('delete'),
    routes: () => [...registered],
    mounts: () => mounts.map(({ prefix, auth }) => ({ prefix, auth })),
    documented: () => [...documented],
    addHook(name, hookFn) {
      (name === 'preClose' ? preClose : onClose).push(hookFn);
    },
    listen({ port, host }) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address();
          const actual = typeof address === 'object' && address ? address.port : port;
          resolve(`http://${host.includes(':') ? `[${host}]` : host}:${actual}`);
        });
      });
    },
    close() {
      closed ??= (async () => {
        closing = true;
        // Stop accepting first, so nothing new arrives while the hooks drain what runs.
        const stopped = new Promise<void>((resolve) => {
          if (!server.listening) return resolve();
          server.close(() => resolve());
        });
        // Keep-alive connections that go idle after their last answer are closed as they do.
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        server.closeIdleConnections();
        try {
          for (const hookFn of preClose) await hookFn();
          await stopped;
        } finally {
          clearInterval(idle);
        }
        for (const hookFn of onClose) await hookFn();
      })();
      return closed;
    },
  };
  registerHealthRoutes(http, options.readiness ?? {});
  return http;

  /** The one log line of a request. */
  function requestLine(req: Request, res: Response) {
    return {
      method: req.method,
      url: redactUrl(req.originalUrl),
      status: res.statusCode,
      ms: Math.round((performance.now() - (res.locals.startedAt as number)) * 10) / 10,
      userId: req.userId,
      remote: req.socket.remoteAddress,
    };
  }
}

/**
 * A constructor for Node's HTTP server that builds its requests (or responses) with Express's
 * prototype from the start. Express re-parents every request and response onto its own
 * prototypes (`Object.setPrototypeOf`), which makes V8 drop the objects' fast shapes; when the
 * prototype is already the one Express sets, that call changes nothing. A measurable part of the
 * HTTP layer's CPU per request (bench/http-stack.ts).
 */
function withPrototype<T extends typeof Http.IncomingMessage | typeof Http.ServerResponse>(
  base: T,
  prototype: object,
): T {
  function Built(this: unknown, ...args: unknown[]) {
    (base as unknown as (...a: unknown[]) => void).apply(this, args);
  }
  Built.prototype = prototype;
  return Built as unknown as T;
}

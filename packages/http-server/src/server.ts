import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { Query, RouteParameters } from 'express-serve-static-core';
import type { z } from 'zod';
import { context, type Tracer } from '@opentelemetry/api';
import { redactUrl, traceFields, type Logger } from '@agent-backend/logger';
import { AppError, ERROR_STATUS, type ErrorCode } from './errors.js';
import { registerHealthRoutes, type ReadinessCheck } from './health.js';
import { parseJsonBody } from './json-body.js';
import type { AuthHook, RouteAuth, RouteHook } from './route-auth.js';
import { assertText, refuseText, type TextProblem } from './text-rules.js';
import { requestSpan, traceRequests } from './trace-requests.js';
import { parseInput } from './validate.js';
import { isDependencyUnavailable } from '@agent-backend/protocol';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own augmentation point.
  namespace Express {
    interface Request {
      /** Set by the bearer-auth hook from the verified token's `sub`. */
      userId?: string;
      /** The request id (from a safe `X-Request-Id`, else generated), echoed back. */
      id: string;
      /** The service's logger, for what a route logs about its request. */
      log: Logger;
    }
  }
}

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
}

/**
 * A route's handler: answers with its return value as JSON (nothing when it wrote the response
 * itself, e.g. `reply.status(204).send()` or a stream), or throws (an {@link AppError} becomes
 * its status and body, anything else a 500).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- Express's own default body type. */
export type RouteHandler<
  Path extends string = string,
  Body = any,
  QueryOut = Query,
  Params = RouteParameters<Path>,
> = (request: RouteRequest<Path, Body, QueryOut, Params>, reply: Response) => unknown;
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * A route's request: its path parameters typed from the path (`:id` → `params.id: string`), its
 * body, query and path parameters the output of the route's `body`, `query` and `params`
 * schemas when it has them.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- Express's own defaults. */
export type RouteRequest<
  Path extends string = string,
  Body = any,
  QueryOut = Query,
  Params = RouteParameters<Path>,
> = Request<Params, any, Body, QueryOut>;
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * A route's options. The `body`, `params` and `query` schemas are validated in that order, after
 * the hooks and the text rules (400 `invalid_request` with field errors, see {@link parseInput}:
 * `invalid request body`, `invalid request path`, `invalid request query`), and the handler gets
 * their output as `request.body`, `request.params` and `request.query`. They are listed by
 * {@link HttpServer.routes}, so documents of the API can be checked against what the server
 * really validates with.
 */
export interface RouteOptions<
  Body extends z.ZodType = z.ZodType,
  QuerySchema extends z.ZodType | undefined = z.ZodType | undefined,
  ParamsSchema extends z.ZodType | undefined = z.ZodType | undefined,
> {
  /** The body's schema. */
  body?: Body;
  /** The path parameters' schema (its input is `{ [name]: string }`, decoded). */
  params?: ParamsSchema;
  /** The query's schema (its input is the parsed query string: `{ [name]: string | string[] }`). */
  query?: QuerySchema;
  /**
   * Authenticates before the body is read (an unauthenticated upload is refused without reading
   * it). A route has at most one hook, `onRequest` or `preHandler`: its {@link RouteAuth} is
   * how the route is listed.
   */
  onRequest?: AuthHook;
  /** Authenticates after the body is parsed, before the handler. */
  preHandler?: AuthHook;
  /** This route's body limit in bytes. @default the server's */
  bodyLimit?: number;
  /** The JSON body as the string received (to check a signature over it), not parsed. */
  rawBody?: boolean;
}

/** The output of `Schema`, or `Otherwise` when the route declares no such schema. */
type OutputOr<Schema, Otherwise> = Schema extends z.ZodType ? z.output<Schema> : Otherwise;

type Register = {
  <Path extends string>(path: Path, handler: RouteHandler<Path>): void;
  <
    Path extends string,
    Body extends z.ZodType = z.ZodType,
    QuerySchema extends z.ZodType | undefined = undefined,
    ParamsSchema extends z.ZodType | undefined = undefined,
  >(
    path: Path,
    options: RouteOptions<Body, QuerySchema, ParamsSchema>,
    handler: RouteHandler<
      Path,
      z.output<Body>,
      OutputOr<QuerySchema, Query>,
      OutputOr<ParamsSchema, RouteParameters<Path>>
    >,
  ): void;
};

/** A registered route, as {@link HttpServer.routes} lists it. */
export interface RegisteredRoute {
  /** Upper case: `GET`, `POST`, ... */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** As registered, with Express-style parameters: `/api/knowledge-bases/:id`. */
  readonly path: string;
  /** The kind of the route's `onRequest` or `preHandler` hook; `none` without one. */
  readonly auth: RouteAuth;
  /** The schema the body is validated with ({@link RouteOptions.body}), when there is one. */
  readonly body?: z.ZodType;
  /** The schema the path parameters are validated with ({@link RouteOptions.params}). */
  readonly params?: z.ZodType;
  /** The schema the query is validated with ({@link RouteOptions.query}). */
  readonly query?: z.ZodType;
  /** The body is kept as received, not parsed ({@link RouteOptions.rawBody}). */
  readonly rawBody: boolean;
}

/** A {@link HttpServer.mount}, as {@link HttpServer.mounts} lists it. */
export interface RegisteredMount {
  /** The path prefix: `/admin/queues`. */
  readonly prefix: string;
  /** The kind of the mount's `onRequest` hook; `none` without one. */
  readonly auth: RouteAuth;
}

/** A mount's options. */
export interface MountOptions {
  /** Authenticates every request under the prefix before the mount's handlers see it. */
  onRequest?: AuthHook;
}

/**
 * The service's HTTP server: Express 5 with the service's conventions. Routes are registered
 * through {@link HttpServer.get} and friends (JSON answers from return values, the error shape of
 * {@link AppError}); `express` is the Express application, for the middleware an operator
 * already runs (add it with {@link HttpServer.use}: it runs before every route).
 */
export interface HttpServer {
  readonly express: Express;
  readonly server: Server;
  /** Middleware run before every route (after the request id and the log line are set up). */
  use(...handlers: RequestHandler[]): void;
  /**
   * Serves the files of `dir` under `mountPath` (a {@link HttpServer.mount}: GET and HEAD;
   * `index.html` for the directory itself; a missing file falls through to the routes, then the
   * JSON 404), with `headers` on every file answered.
   */
  serveStatic(mountPath: string, dir: string, headers?: Record<string, string>): void;
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
  /** Every route registered so far, in registration order (the health routes first). */
  routes(): RegisteredRoute[];
  /** Every {@link HttpServer.mount} so far (static files included), in order. */
  mounts(): RegisteredMount[];
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

/** Accept a caller's request id only if it is short and printable, so it cannot forge log lines. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** The `{ error: { code, message, details? } }` body of every error answer. */
function errorBody(code: string, message: string, details?: unknown) {
  return { error: { code, message, ...(details !== undefined ? { details } : {}) } };
}

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
  const server = createServer(
    {
      IncomingMessage: withPrototype(IncomingMessage, app.request),
      ServerResponse: withPrototype(ServerResponse, app.response),
    },
    app,
  );
  let closing = false;

  const before = express.Router();
  let hasMiddleware = false;
  const routes = new RouteTable();
  const registered: RegisteredRoute[] = [];
  const mounts: Array<{ prefix: string; auth: RouteAuth; router: express.Router }> = [];
  const { observe } = options;
  const notFound = (req: Request, res: Response) => {
    const path = req.originalUrl.split('?')[0];
    sendJson(res, 404, errorBody('not_found', `no route for ${req.method} ${path}`));
  };
  if (options.tracer) app.use(traceRequests(options.tracer));
  // One middleware in front of everything (each Express layer costs a router step): the request
  // id, the request's log line, the 503 while closing, the operator's middleware, the routes.
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
            mountError
              ? next(mountError)
              : routes.dispatch(req, res, (routeError?: unknown) =>
                  routeError ? next(routeError) : notFound(req, res),
                ),
          );
          return;
        }
      }
      routes.dispatch(req, res, (routeError?: unknown) =>
        routeError ? next(routeError) : notFound(req, res),
      );
    };
    if (hasMiddleware) before(req, res, dispatch);
    else dispatch();
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    sendError(error, req, res);
  });

  // The HTTP parser's refusals (headers too large, malformed requests, timeouts) never reach
  // Express: answer them on the socket, in the same shape.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, code, message] = clientErrorAnswer(error.code);
    const body = JSON.stringify(errorBody(code, message));
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    logger.info({ status, code: error.code }, 'request refused by the HTTP parser');
  });

  const preClose: Array<() => unknown> = [];
  const onClose: Array<() => unknown> = [];
  let closed: Promise<void> | undefined;

  const register = (method: 'get' | 'post' | 'put' | 'patch' | 'delete'): Register =>
    ((path: string, second: RouteOptions | RouteHandler, third?: RouteHandler) => {
      const routeOptions = typeof second === 'function' ? {} : second;
      const handler = typeof second === 'function' ? second : third!;
      if (routeOptions.onRequest && routeOptions.preHandler) {
        throw new Error(`${method.toUpperCase()} ${path}: one hook, onRequest or preHandler`);
      }
      const authentication = routeOptions.onRequest ?? routeOptions.preHandler;
      const chain: RequestHandler[] = [];
      if (routeOptions.onRequest) chain.push(hook(routeOptions.onRequest));
      if (method !== 'get') {
        chain.push(jsonBody(routeOptions.bodyLimit ?? defaultLimit, routeOptions.rawBody ?? false));
      }
      if (routeOptions.preHandler) chain.push(hook(routeOptions.preHandler));
      // The text rules, for every route (after authentication): path parameters, query, body.
      chain.push((req, res, next) => {
        try {
          assertText(req.params, 'path');
          // `req.query` parses the query string on every read: only when there is one.
          if (req.url.includes('?')) assertText(req.query, 'query');
          if (!routeOptions.rawBody) {
            const problems = res.locals.bodyProblems as TextProblem[] | undefined;
            if (problems) refuseText(problems, 'body');
            else assertText(req.body, 'body');
          }
          next();
        } catch (error) {
          next(error);
        }
      });

      const { body: bodySchema, params: paramsSchema, query: querySchema } = routeOptions;
      if (bodySchema || paramsSchema || querySchema) {
        chain.push((req, _res, next) => {
          try {
            if (bodySchema) req.body = parseInput(bodySchema, req.body);
            if (paramsSchema) {
              req.params = parseInput(paramsSchema, req.params, 'path') as Request['params'];
            }
            if (querySchema) {
              // Express 5's `query` is a getter that parses the query string on each read.
              Object.defineProperty(req, 'query', {
                value: parseInput(querySchema, req.query, 'query'),
                writable: true,
                enumerable: true,
                configurable: true,
              });
            }
            next();
          } catch (error) {
            next(error);
          }
        });
      }

      chain.push(async (req, res, next) => {
        try {
          const value = await handler(req as never, res);
          if (value === undefined || value === res || res.headersSent || res.writableEnded) return;
          sendJson(res, res.statusCode, value);
        } catch (error) {
          next(error);
        }
      });
      routes.add(method, path, chain);
      registered.push({
        method: method.toUpperCase() as RegisteredRoute['method'],
        path,
        auth: authentication?.auth ?? 'none',
        ...(bodySchema ? { body: bodySchema } : {}),
        ...(paramsSchema ? { params: paramsSchema } : {}),
        ...(querySchema ? { query: querySchema } : {}),
        rawBody: routeOptions.rawBody ?? false,
      });
    }) as Register;

  const http: HttpServer = {
    express: app,
    server,
    use: (...handlers) => {
      before.use(...handlers);
      hasMiddleware = true;
    },
    serveStatic(mountPath, dir, headers = {}) {
      http.mount(
        mountPath,
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
      const { onRequest } = mountOptions;
      const router = express.Router();
      router.use(prefix, ...(onRequest ? [hook(onRequest)] : []), ...handlers);
      mounts.push({ prefix, auth: onRequest?.auth ?? 'none', router });
    },
    get: register('get'),
    post: register('post'),
    put: register('put'),
    patch: register('patch'),
    delete: register('delete'),
    routes: () => [...registered],
    mounts: () => mounts.map(({ prefix, auth }) => ({ prefix, auth })),
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

  function sendError(error: unknown, req: Request, res: Response): void {
    if (res.headersSent) {
      req.log.error({ err: error }, 'error after the answer started');
      res.destroy();
      return;
    }
    if (error instanceof AppError) {
      if (error.code === 'payload_too_large') drainRejectedBody(req, res);
      if (error.headers) res.set(error.headers);
      sendJson(res, error.status, errorBody(error.code, error.message, error.details));
      return;
    }
    const mapped = mapFrameworkError(error as FrameworkError);
    if (mapped) {
      sendJson(res, ERROR_STATUS[mapped.code], errorBody(mapped.code, mapped.message));
      return;
    }
    if (isDependencyUnavailable(error)) {
      req.log.warn({ err: error }, 'a dependency is unavailable');
      sendJson(
        res,
        ERROR_STATUS.unavailable,
        errorBody('unavailable', 'the database or Redis is unavailable; retry shortly'),
      );
      return;
    }
    req.log.error({ err: error }, 'unhandled error');
    sendJson(res, 500, errorBody('internal_error', 'internal server error'));
  }
}

/**
 * A constructor for Node's HTTP server that builds its requests (or responses) with Express's
 * prototype from the start. Express re-parents every request and response onto its own
 * prototypes (`Object.setPrototypeOf`), which makes V8 drop the objects' fast shapes; when the
 * prototype is already the one Express sets, that call changes nothing. A measurable part of the
 * HTTP layer's CPU per request (bench/http-stack.ts).
 */
function withPrototype<T extends typeof IncomingMessage | typeof ServerResponse>(
  base: T,
  prototype: object,
): T {
  function Built(this: unknown, ...args: unknown[]) {
    (base as unknown as (...a: unknown[]) => void).apply(this, args);
  }
  Built.prototype = prototype;
  return Built as unknown as T;
}

/**
 * Writes a JSON answer directly (Express's `res.json` → `res.send` re-derives the content type,
 * charset and freshness on every call, a sixth of the HTTP layer's CPU per request).
 */
function sendJson(res: Response, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}

/** Runs a route hook as middleware; what it throws goes to the error handler. */
function hook(fn: RouteHook): RequestHandler {
  return async (req, res, next) => {
    try {
      await fn(req, res);
      next();
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Reads a JSON body up to `limit` bytes: a body of another media type (or compressed, or not
 * UTF-8) is 415, an empty or malformed one 400 `invalid_json`, a larger one 413 as soon as its
 * Content-Length or its bytes show it (the rest is drained by the error handler); a request
 * without a body goes on with `body` undefined (the route's schema says what is missing).
 */
function jsonBody(limit: number, raw: boolean): RequestHandler {
  return (req, res, next) => {
    const length = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (length ?? '0') !== '0';
    const isJson = req.is('application/json') === 'application/json';
    if (!hasBody) {
      if (isJson && length === '0') return next(jsonError());
      return next();
    }
    const charset = /;\s*charset=([^;\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1];
    const encoding = req.headers['content-encoding'];
    if (
      !isJson ||
      (charset !== undefined && !/^"?utf-?8"?$/i.test(charset)) ||
      (encoding !== undefined && encoding !== 'identity')
    ) {
      return next(new AppError('unsupported_media_type', 'request body must be application/json'));
    }
    if (length !== undefined && Number(length) > limit) return next(tooLarge(limit));
    // A large body with a Content-Length is copied into one buffer as its bytes arrive (a 10 MB
    // body copied at the end would hold the event loop for tens of milliseconds); others at the end.
    const expected = length === undefined ? undefined : Number(length);
    const whole =
      expected !== undefined && expected >= PREALLOCATED_BODY_BYTES
        ? Buffer.allocUnsafeSlow(expected)
        : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    // The body's events come from the socket, outside the request's context (the trace span,
    // when tracing is on): the chain resumes in the context this middleware was called in.
    // Tracing off: `bind` hands the function back as it is.
    const finish = context.bind(context.active(), (error?: unknown) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', finish);
      if (error) return next(error);
      if (whole && received !== expected) return next(jsonError());
      const body = whole ?? Buffer.concat(chunks, received);
      if (raw) {
        req.body = body.toString('utf8');
        return next();
      }
      parseJsonBody(body).then(
        (parsed) => {
          if (!parsed) return next(jsonError());
          req.body = parsed.value;
          // Checked with the text rules while parsing; reported after authentication.
          res.locals.bodyProblems = parsed.problems;
          next();
        },
        (parseError: unknown) => {
          // The body thread failed or died; the request is answered 503 and the next large body
          // gets a new thread.
          req.log.error(
            { err: parseError instanceof Error ? (parseError.cause ?? parseError) : parseError },
            'the JSON body thread could not read a body',
          );
          next(parseError);
        },
      );
    });
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        req.pause();
        return finish(tooLarge(limit));
      }
      if (whole) {
        if (received > whole.length) return finish(jsonError());
        chunk.copy(whole, received - chunk.length);
      } else chunks.push(chunk);
    };
    const onEnd = () => finish();
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', finish);
  };
}

/** Bodies from this size on are gathered into a buffer allocated once from their Content-Length. */
const PREALLOCATED_BODY_BYTES = 64 * 1024;

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `request body is larger than ${limit} bytes`);
}

function jsonError(): AppError {
  return new AppError('invalid_json', 'request body is not valid JSON');
}

/** What Express throws (http-errors: `status`). */
interface FrameworkError extends Error {
  status?: number;
  statusCode?: number;
}

/** Express's own client errors in our error shape. */
function mapFrameworkError(
  error: FrameworkError,
): { code: ErrorCode; message: string } | undefined {
  // The router decodes path parameters with decodeURIComponent.
  if (error instanceof URIError) {
    return { code: 'invalid_url', message: 'the request path has a malformed percent-encoding' };
  }
  const status = error.status ?? error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return { code: 'invalid_request', message: error.message };
  }
  return undefined;
}

/** The answer to a request the HTTP parser refused: status line parts, code, message. */
function clientErrorAnswer(code: string | undefined): [number, string, ErrorCode, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'Request Header Fields Too Large',
        'headers_too_large',
        'the request line and headers are larger than the server accepts (16 KiB)',
      ];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return [408, 'Request Timeout', 'request_timeout', 'the request was not received in time'];
    default:
      return [400, 'Bad Request', 'invalid_request', 'the request is not valid HTTP/1.1'];
  }
}

/** How long, and how much, a rejected oversized body is still read so the client sees the 413. */
export const REJECTED_BODY_DRAIN = { ms: 10_000, bytes: 64 * 1024 * 1024 } as const;

/**
 * A body over the limit is answered 413 as soon as its Content-Length (or its first bytes past
 * the limit) show it. A client still writing the body (fetch and most HTTP libraries write all of
 * it before they read) would get a reset, reported as EPIPE or ECONNRESET instead of the 413, if
 * the connection were closed. So, as nginx's lingering close does, the rest of the body is read
 * and discarded and the connection stays usable; a body that goes on past
 * {@link REJECTED_BODY_DRAIN} (bytes or time) has its connection destroyed.
 */
function drainRejectedBody(req: IncomingMessage, res: Response): void {
  if (req.complete) return;
  res.removeHeader('connection');
  let drained = 0;
  const cut = () => req.socket?.destroy();
  const timer = setTimeout(cut, REJECTED_BODY_DRAIN.ms);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REJECTED_BODY_DRAIN.bytes) cut();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * The routes of the server, matched by method and path: a map lookup for static paths, one
 * anchored expression per parameterised path (`/api/knowledge-bases/:id`). Express's router
 * walks every layer with path-to-regexp for every request; this was a third of the HTTP layer's
 * CPU per request (bench/http-stack.ts), so routes are dispatched here and Express keeps the
 * middleware in front of them.
 */
class RouteTable {
  private readonly exact = new Map<string, RequestHandler[]>();
  private readonly patterns: Array<{
    method: string;
    path: string;
    pattern: RegExp;
    names: string[];
    chain: RequestHandler[];
  }> = [];

  add(method: string, path: string, chain: RequestHandler[]): void {
    const verb = method.toUpperCase();
    const names: string[] = [];
    if (!path.includes(':')) {
      this.exact.set(`${verb} ${path}`, chain);
      return;
    }
    const source = path
      .split('/')
      .map((segment) => {
        if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        names.push(segment.slice(1));
        return '([^/]+)';
      })
      .join('/');
    this.patterns.push({
      method: verb,
      path,
      pattern: new RegExp(`^${source}/?$`),
      names,
      chain,
    });
  }

  dispatch(req: Request, res: Response, next: NextFunction): void {
    const queryAt = req.url.indexOf('?');
    const path = queryAt === -1 ? req.url : req.url.slice(0, queryAt);
    const methods = req.method === 'HEAD' ? ['HEAD', 'GET'] : [req.method];
    for (const method of methods) {
      const chain = this.exact.get(`${method} ${path}`);
      if (chain) {
        res.locals.route = path;
        return run(chain, req, res, next);
      }
    }
    for (const route of this.patterns) {
      if (!methods.includes(route.method)) continue;
      const match = route.pattern.exec(path);
      if (!match) continue;
      const params: Record<string, string> = {};
      try {
        route.names.forEach((name, i) => (params[name] = decodeURIComponent(match[i + 1]!)));
      } catch (error) {
        return next(error);
      }
      req.params = params;
      res.locals.route = route.path;
      return run(route.chain, req, res, next);
    }
    next();
  }
}

/** The mount whose prefix is the path of `url` or a parent of it. */
function mountFor<Mount extends { prefix: string }>(
  mounts: readonly Mount[],
  url: string,
): Mount | undefined {
  for (const mount of mounts) {
    if (!url.startsWith(mount.prefix)) continue;
    const next = url.charCodeAt(mount.prefix.length);
    // End of the path, `/` or `?` after the prefix: `/admin/queuesX` is not below `/admin/queues`.
    if (Number.isNaN(next) || next === 47 || next === 63) return mount;
  }
  return undefined;
}

/** Runs a route's handlers in order; an error (or the last one's `next`) leaves the chain. */
function run(chain: RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let index = 0;
  const step = (error?: unknown): void => {
    if (error !== undefined && error !== null) return done(error);
    const handler = chain[index++];
    if (!handler) return done();
    try {
      void handler(req, res, step);
    } catch (thrown) {
      done(thrown);
    }
  };
  step();
}

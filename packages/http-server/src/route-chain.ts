import type { Request, RequestHandler } from 'express';
import { sendJson } from './error-answers.js';
import { jsonBody } from './body-reader.js';
import type { RouteHook } from './route-auth.js';
import type { RegisteredRoute, RouteHandler, RouteOptions } from './route-types.js';
import { assertText, refuseText, type TextProblem } from './text-rules.js';
import { parseInput } from './validate.js';

/** The route methods, as `HttpServer` names its registration functions. */
export type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * The middleware a route runs, in order: its `onRequest` hook, the body reader (not for GET),
 * its `preHandler` hook, the text rules, its schemas, and its handler (whose return value is the
 * JSON answer); and the route as `HttpServer.routes()` lists it.
 */
export function routeChain(
  method: RouteMethod,
  path: string,
  options: RouteOptions,
  handler: RouteHandler,
  defaultLimit: number,
): { chain: RequestHandler[]; route: RegisteredRoute } {
  if (options.onRequest && options.preHandler) {
    throw new Error(`${method.toUpperCase()} ${path}: one hook, onRequest or preHandler`);
  }
  const authentication = options.onRequest ?? options.preHandler;
  const chain: RequestHandler[] = [];
  if (options.onRequest) chain.push(hook(options.onRequest));
  // Before the body is read, unless the user is known only after it (a `preHandler`).
  if (options.limit && !options.preHandler) chain.push(hook(options.limit));
  if (method !== 'get') {
    chain.push(jsonBody(options.bodyLimit ?? defaultLimit, options.rawBody ?? false));
  }
  if (options.preHandler) chain.push(hook(options.preHandler));
  if (options.limit && options.preHandler) chain.push(hook(options.limit));
  // The text rules, for every route (after authentication): path parameters, query, body.
  chain.push((req, res, next) => {
    try {
      assertText(req.params, 'path');
      // `req.query` parses the query string on every read: only when there is one.
      if (req.url.includes('?')) assertText(req.query, 'query');
      if (!options.rawBody) {
        const problems = res.locals.bodyProblems as TextProblem[] | undefined;
        if (problems) refuseText(problems, 'body');
        else assertText(req.body, 'body');
      }
      next();
    } catch (error) {
      next(error);
    }
  });

  const { body: bodySchema, params: paramsSchema, query: querySchema } = options;
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
  const route: RegisteredRoute = {
    method: method.toUpperCase() as RegisteredRoute['method'],
    path,
    auth: authentication?.auth ?? 'none',
    ...(bodySchema ? { body: bodySchema } : {}),
    ...(paramsSchema ? { params: paramsSchema } : {}),
    ...(querySchema ? { query: querySchema } : {}),
    rawBody: options.rawBody ?? false,
  };
  return { chain, route };
}

/** Runs a route hook as middleware; what it throws goes to the error handler. */
export function hook(fn: RouteHook): RequestHandler {
  return async (req, res, next) => {
    try {
      await fn(req, res);
      next();
    } catch (error) {
      next(error);
    }
  };
}

import type { Query, RouteParameters } from 'express-serve-static-core';
import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Logger } from '@agent-backend/logger';
import type { AuthHook, RouteAuth, RouteHook } from './route-auth.js';
import type { RouteDocs } from './route-doc.js';

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
  Known = unknown,
> = (request: RouteRequest<Path, Body, QueryOut, Params> & Known, reply: Response) => unknown;
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
 * What a request is known to carry once a hook of this kind ran: a `bearer` hook sets the user
 * (`request.userId`, the token's `sub`), so a route authenticated with one reads it without `!`.
 */
export type KnownAfter<Hook> = [Hook] extends [never]
  ? unknown
  : Hook extends { readonly auth: 'bearer' }
    ? { userId: string }
    : unknown;

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
  Hook extends AuthHook = AuthHook,
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
   * how the route is listed, and its handler's request carries what the hook sets
   * ({@link KnownAfter}: the user, after a `bearer` hook).
   */
  onRequest?: Hook;
  /** Authenticates after the body is parsed, before the handler. */
  preHandler?: Hook;
  /**
   * A limit on how often the route may be called (a rate limit of its class): runs right after
   * the authentication hook (so it knows the user), or first on a route without one. It throws
   * to refuse (429 `rate_limited`); the route's documented errors then include `rate_limited`.
   */
  limit?: RouteHook;
  /** This route's body limit in bytes. @default the server's */
  bodyLimit?: number;
  /** The JSON body as the string received (to check a signature over it), not parsed. */
  rawBody?: boolean;
  /**
   * What the API documents say about the route (`HttpServer.documented()` lists it with its
   * method, path, schemas and credential): the route's documentation lives where it is
   * registered.
   */
  doc?: RouteDocs;
  /**
   * `false`: not served in this configuration (its path is the ordinary 404, its handler never
   * runs), but documented, so the documents describe every route a configuration can turn on.
   * @default true
   */
  enabled?: boolean;
}

/** The output of `Schema`, or `Otherwise` when the route declares no such schema. */
type OutputOr<Schema, Otherwise> = Schema extends z.ZodType ? z.output<Schema> : Otherwise;

export type Register = {
  <Path extends string>(path: Path, handler: RouteHandler<Path>): void;
  <
    Path extends string,
    Body extends z.ZodType = z.ZodType,
    QuerySchema extends z.ZodType | undefined = undefined,
    ParamsSchema extends z.ZodType | undefined = undefined,
    Hook extends AuthHook = never,
  >(
    path: Path,
    options: RouteOptions<Body, QuerySchema, ParamsSchema, Hook>,
    handler: RouteHandler<
      Path,
      z.output<Body>,
      OutputOr<QuerySchema, Query>,
      OutputOr<ParamsSchema, RouteParameters<Path>>,
      KnownAfter<Hook>
    >,
  ): void;
};

/**
 * The second form of {@link Register}, its options carrying `Extra` as well: the register of a
 * router that sets a route's hook itself and takes settings of its own with each route (the
 * operator API's router).
 */
export type RegisterWith<Extra> = <
  Path extends string,
  Body extends z.ZodType = z.ZodType,
  QuerySchema extends z.ZodType | undefined = undefined,
  ParamsSchema extends z.ZodType | undefined = undefined,
>(
  path: Path,
  options: Omit<RouteOptions<Body, QuerySchema, ParamsSchema, never>, 'onRequest' | 'preHandler'> &
    Extra,
  handler: RouteHandler<
    Path,
    z.output<Body>,
    OutputOr<QuerySchema, Query>,
    OutputOr<ParamsSchema, RouteParameters<Path>>
  >,
) => void;

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
  /** What the API documents say about the prefix (see {@link RouteOptions.doc}). */
  doc?: RouteDocs;
  /** `false`: documented, not served (see {@link RouteOptions.enabled}). @default true */
  enabled?: boolean;
}

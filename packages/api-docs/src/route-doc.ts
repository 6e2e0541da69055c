import type { z } from 'zod';
import type { ErrorCode } from '@agent-backend/http-server';

/** The HTTP methods the service's routes use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How a route is authenticated:
 * - `bearer`: `Authorization: Bearer <access token>` (an RS256 JWT; the user is its `sub`);
 * - `internal`: `X-Internal-Secret` equal to `INTERNAL_API_SECRET` (503 when it is unset);
 * - `admin`: the operator credential `ADMIN_TOKEN` (bearer or basic), never a user's token;
 * - `metrics`: the operator credential `METRICS_TOKEN` (bearer) when it is configured; without
 *   it the route is public;
 * - `webhook`: no header credential; the chat platform's signature and verification token are
 *   checked on the body when configured;
 * - `none`: public (health, documents, token refresh).
 *
 * tests/api-docs.test.ts compares it with the kind of the hook each route and mount runs
 * (`RegisteredRoute.auth` of the http-server package); a `webhook` route runs none.
 */
export type RouteAuth = 'bearer' | 'internal' | 'webhook' | 'admin' | 'metrics' | 'none';

/** One schema, or several a body may match (`anyOf`). Protocol exports only. */
export type SchemaRef = z.ZodType | readonly z.ZodType[];

/** A parameter that is not part of a query schema: a header, or a query parameter of its own. */
export interface ParameterDoc {
  readonly in: 'path' | 'query' | 'header';
  readonly name: string;
  readonly description: string;
  /** @default a non-empty string */
  readonly schema?: z.ZodType;
  /** @default true for path parameters, false otherwise */
  readonly required?: boolean;
}

/** One answer of a route other than the service-wide error body. */
export interface ResponseDoc {
  readonly description: string;
  /** A JSON body. */
  readonly json?: SchemaRef;
  /** A `text/event-stream` body; each event's `data:` line is one value of this schema. */
  readonly events?: z.ZodType;
  /** An HTML page. */
  readonly html?: true;
  /** Plain text in a named format (the Prometheus exposition format of `/metrics`). */
  readonly text?: string;
  /** A JSON document that no protocol schema describes (the API documents themselves). */
  readonly anyJson?: true;
  /** Response headers, name to meaning. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * One HTTP route as the documents describe it. The body, path and query schemas are the objects
 * the route declares (`RouteOptions.body`, `params`, `query`), so the document shows exactly what
 * the server validates.
 */
export interface RouteDoc {
  readonly method: HttpMethod;
  /** As registered: Express-style parameters (`/api/knowledge-bases/:id`). */
  readonly path: string;
  /**
   * The path is a mount prefix (`HttpServer.mount`, static files included): the route answers
   * the prefix and every path below it, with files or a small web application of its own.
   */
  readonly mount?: true;
  /** `api`: the api role (and the all-in-one); `every role`: api, gateway, worker and all-in-one. */
  readonly roles: 'api' | 'every role';
  /** The group the route is listed under. */
  readonly tag: string;
  readonly summary: string;
  /** Markdown. */
  readonly description?: string;
  readonly auth: RouteAuth;
  /** The path parameters' schema, when the route validates them with one (its `params` option). */
  readonly params?: z.ZodObject;
  /** The query's schema (the route's `query` option): each property is one query parameter. */
  readonly query?: z.ZodType;
  /** Further parameters; every `:name` of the path without a `params` schema needs one. */
  readonly parameters?: readonly ParameterDoc[];
  /** The body schema the server validates with (the route's `body` option). */
  readonly body?: z.ZodType;
  /** A body the route reads raw and checks itself (the webhook's signature is over its bytes). */
  readonly rawBody?: SchemaRef;
  /** Answers by status, other than the service-wide `{ error }` ones listed in `errors`. */
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /**
   * Error codes this route answers with itself (`{ error: { code, message, details? } }`),
   * beyond those of every route (see `commonErrors`).
   */
  readonly errors?: readonly ErrorCode[];
}

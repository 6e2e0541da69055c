import type { z } from 'zod';
import type { ErrorCode } from './errors.js';
import type { RouteAuth } from './route-auth.js';

/** The HTTP methods the service's routes use. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * How the documents show a route's credential: the kind of its hook ({@link RouteAuth}), or
 * `webhook`: no header credential, the chat platform's signature and verification token are
 * checked on the body by the handler when configured.
 */
export type DocumentedAuth = RouteAuth | 'webhook';

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
  /** Bytes of this media type (`application/x-tar`: a user's data export). */
  readonly binary?: string;
  /** A JSON document that no protocol schema describes (the API documents themselves). */
  readonly anyJson?: true;
  /** Response headers, name to meaning. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * What a route's registration says about it for the API documents (`RouteOptions.doc`,
 * `MountOptions.doc`); the method, path, schemas and credential come from the registration
 * itself ({@link DocumentedRoute}).
 */
export interface RouteDocs {
  /** The group the route is listed under (one of the document's tags). */
  readonly tag: string;
  readonly summary: string;
  /** Markdown. */
  readonly description?: string;
  /**
   * The credential as the documents show it, when it is not the kind of the route's hook: the
   * webhook's `webhook`, or the operator credential of a route whose hook depends on the
   * configuration (`/metrics`) or that is not served in this configuration.
   */
  readonly auth?: DocumentedAuth;
  /** Further parameters; every `:name` of the path without a `params` schema needs one. */
  readonly parameters?: readonly ParameterDoc[];
  /** A body the route reads raw and checks itself (the webhook's signature is over its bytes). */
  readonly rawBody?: SchemaRef;
  /** Answers by status, other than the service-wide `{ error }` ones listed in `errors`. */
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /**
   * Error codes this route answers with itself (`{ error: { code, message, details? } }`),
   * beyond those of every route.
   */
  readonly errors?: readonly ErrorCode[];
}

/**
 * One HTTP route as the documents describe it, as `HttpServer.documented()` lists it: its
 * registration's {@link RouteDocs} with the method, path, schemas and credential the server
 * really uses, so the document shows exactly what is validated.
 */
export interface DocumentedRoute extends RouteDocs {
  readonly method: HttpMethod;
  /** As registered: Express-style parameters (`/api/knowledge-bases/:id`). */
  readonly path: string;
  /**
   * The path is a mount prefix (`HttpServer.mount`, static files included): the route answers
   * the prefix and every path below it, with files or a small web application of its own.
   */
  readonly mount?: true;
  readonly auth: DocumentedAuth;
  /**
   * Served in this process's configuration; `false` for a route registered with
   * `enabled: false` (documented, its path the ordinary 404).
   */
  readonly enabled: boolean;
  /** The path parameters' schema, when the route validates them with one (its `params` option). */
  readonly params?: z.ZodType;
  /** The query's schema (the route's `query` option): each property is one query parameter. */
  readonly query?: z.ZodType;
  /** The body schema the server validates with (the route's `body` option). */
  readonly body?: z.ZodType;
}

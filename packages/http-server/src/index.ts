export {
  createHttpServer,
  REJECTED_BODY_DRAIN,
  type CreateHttpServerOptions,
  type HttpServer,
  type MountOptions,
  type RouteHandler,
  type RegisteredMount,
  type RegisterWith,
  type RegisteredRoute,
  type RouteOptions,
  type RouteRequest,
  type KnownAfter,
} from './server.js';
export { registerHealthRoutes, type ReadinessCheck } from './health.js';
export { AppError, ERROR_STATUS, type ErrorCode } from './errors.js';
export { parseInput } from './validate.js';
export { assertText, MAX_JSON_DEPTH, textProblem, textProblems } from './text-rules.js';
export { bearerAuth, type VerifyAccessToken } from './bearer-auth.js';
export { handleShutdown, type ShutdownOptions } from './lifecycle.js';
export { OFF_THREAD_BODY_BYTES } from './json-body.js';
export {
  operatorCredential,
  type OperatorCredential,
  type OperatorScheme,
} from './operator-auth.js';
export {
  authHook,
  type AuthHook,
  type BearerHook,
  type RouteAuth,
  type RouteHook,
} from './route-auth.js';
export { inlineSourceHash, pageHeaders } from './page-headers.js';
export type {
  DocumentedAuth,
  DocumentedRoute,
  HttpMethod,
  ParameterDoc,
  ResponseDoc,
  RouteDocs,
  SchemaRef,
} from './route-doc.js';

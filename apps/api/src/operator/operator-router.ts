import { randomUUID } from 'node:crypto';
import {
  AppError,
  authHook,
  operatorCredential,
  type RegisterWith,
} from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';
import { refusalRecorder } from './operator-refusals.js';

/** What an operator route declares besides the usual route options. */
export interface OperatorRouteSettings {
  /**
   * Whom the route's `operator.call` record names. `user` (the default): the path's `:user_id`,
   * as the record's user and in its parameters. `nobody`: neither, for a route whose record
   * must not outlive the user (the erasure: a record naming the user it erased would be found
   * by the next erasure).
   */
  readonly auditSubject?: 'user' | 'nobody';
}

/**
 * Registers one operator route: `(path, options, handler)` as `app.get` takes them, without a
 * hook (the router sets it) and with {@link OperatorRouteSettings}, documented under the
 * `operator` tag.
 */
type OperatorRegister = RegisterWith<OperatorRouteSettings>;

/**
 * Registers the operator API's routes (docs/operations.md, "Operator API"): every route under
 * `/api/operator/`, behind `ADMIN_TOKEN` (`Authorization: Bearer`; a user's access token is a
 * wrong secret here), and recorded in the audit log as `operator.call` (method, route, path
 * parameters, outcome) once it answered. A refused credential is counted
 * (`operator_auth_failures_total`) and recorded as `operator.auth_failed`, a bounded number of
 * times (operator-refusals.ts). Without `ADMIN_TOKEN` the routes are registered unserved:
 * documented, and the ordinary 404.
 *
 * Adding an operator route is one call: `router.post(path, { params, doc }, handler)`, the path
 * under `/api/operator/`.
 */
export interface OperatorRouter {
  readonly get: OperatorRegister;
  readonly post: OperatorRegister;
  readonly delete: OperatorRegister;
  /** Whether the routes are served (`ADMIN_TOKEN` is set). */
  readonly enabled: boolean;
}

type Method = 'GET' | 'POST' | 'DELETE';
type AuditedRequest = Parameters<ServiceContext['audit']['record']>[1];

export function createOperatorRouter(context: ServiceContext): OperatorRouter {
  const { app, config, audit } = context;
  const enabled = config.ADMIN_TOKEN !== undefined;
  // Unset, the hook is never reached (the routes are not served); a random secret keeps it shut.
  const check = operatorCredential(
    'admin',
    config.ADMIN_TOKEN ?? randomUUID(),
    'bearer',
    'operator',
  );
  const refused = refusalRecorder(context);
  const hookFor = (method: Method, route: string) =>
    authHook('admin', async (request) => {
      try {
        check(request);
      } catch (error) {
        await refused(method, route, request);
        throw error;
      }
    });
  type Handler = (request: { params: unknown }, reply: unknown) => unknown;
  type Options = Parameters<OperatorRegister>[1];
  const wrap = (method: Method, register: ServiceContext['app']['get']): OperatorRegister =>
    ((path: string, options: Options, handler: Handler) => {
      const { auditSubject = 'user', ...routeOptions } = options;
      const audited = async (request: Parameters<Handler>[0], reply: unknown) => {
        let outcome = 'ok';
        try {
          return await handler(request, reply);
        } catch (error) {
          outcome = error instanceof AppError ? error.code : 'internal_error';
          throw error;
        } finally {
          const given = request.params as Record<string, string | undefined>;
          const { user_id, ...rest } = given;
          const named = auditSubject === 'user';
          await audit.record(
            {
              action: 'operator.call',
              userId: named ? (user_id ?? null) : null,
              actor: 'operator',
              details: { method, route: path, params: named ? given : rest, outcome },
            },
            request as AuditedRequest,
          );
        }
      };
      const doc = routeOptions.doc;
      register(
        path,
        {
          ...routeOptions,
          preHandler: hookFor(method, path),
          enabled,
          ...(doc ? { doc: { ...doc, errors: ['unauthorized', ...(doc.errors ?? [])] } } : {}),
        } as never,
        audited as never,
      );
    }) as OperatorRegister;
  return {
    get: wrap('GET', app.get.bind(app)),
    post: wrap('POST', app.post.bind(app)),
    delete: wrap('DELETE', app.delete.bind(app)),
    enabled,
  };
}

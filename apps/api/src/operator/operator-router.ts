import { randomUUID } from 'node:crypto';
import { AppError, operatorCredential, type HttpServer } from '@agent-backend/http-server';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * Registers one operator route: `(path, options, handler)` as `app.get` takes them, documented
 * under the `operator` tag; the router sets the hook and whether the route is served.
 */
type OperatorRegister = HttpServer['get'];

/**
 * Registers the operator API's routes (docs/operations.md, "Operator API"): every route under
 * `/api/operator/`, behind `ADMIN_TOKEN` (`Authorization: Bearer`; a user's access token is a
 * wrong secret here), and recorded in the audit log as
 * `operator.call` (method, route, path parameters, outcome) once it answered. Without
 * `ADMIN_TOKEN` the routes are registered unserved: documented, and the ordinary 404.
 *
 * Adding an operator route is one call: `router.post('/api/operator/users/:user_id/x', { params,
 * doc }, handler)`.
 */
export interface OperatorRouter {
  readonly get: OperatorRegister;
  readonly post: OperatorRegister;
  readonly delete: OperatorRegister;
  /** Whether the routes are served (`ADMIN_TOKEN` is set). */
  readonly enabled: boolean;
}

/** Routes whose `operator.call` record leaves out the user they act on. */
const NAMES_NOBODY = new Set(['/api/operator/users/:user_id/erase']);

export function createOperatorRouter({ app, config, audit }: ServiceContext): OperatorRouter {
  const enabled = config.ADMIN_TOKEN !== undefined;
  // Unset, the hook is never reached (the routes are not served); a random secret keeps it shut.
  const requireOperator = operatorCredential(
    'admin',
    config.ADMIN_TOKEN ?? randomUUID(),
    'bearer',
    'operator',
  );
  type Handler = (request: { params: unknown }, reply: unknown) => unknown;
  const wrap = (method: 'GET' | 'POST' | 'DELETE', register: OperatorRegister): OperatorRegister =>
    ((path: string, options: Parameters<OperatorRegister>[1], handler: Handler) => {
      const audited = async (request: Parameters<Handler>[0], reply: unknown) => {
        let outcome = 'ok';
        try {
          return await handler(request, reply);
        } catch (error) {
          outcome = error instanceof AppError ? error.code : 'internal_error';
          throw error;
        } finally {
          const given = request.params as Record<string, string | undefined>;
          // An erasure's own record names nobody, or it would name the user it erased (and a
          // second erasure would find it): `user.data_erased` carries the erasure id instead.
          const { user_id, ...rest } = given;
          const named = !NAMES_NOBODY.has(path);
          const params = named ? given : rest;
          await audit.record(
            {
              action: 'operator.call',
              userId: named ? (user_id ?? null) : null,
              actor: 'operator',
              details: { method, route: path, params, outcome },
            },
            request as Parameters<typeof audit.record>[1],
          );
        }
      };
      const doc = options.doc;
      register(
        path,
        {
          ...options,
          preHandler: requireOperator,
          enabled,
          ...(doc ? { doc: { ...doc, errors: ['unauthorized', ...(doc.errors ?? [])] } } : {}),
        },
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

import type { Request, Response } from 'express';

/** A check before the handler (authentication); throws to answer instead of the handler. */
export type RouteHook = (request: Request, reply: Response) => Promise<void> | void;

/**
 * How a route (or a mount) is authenticated, as `HttpServer.routes()` and `mounts()` list it: the
 * kind of its hook, so a listing shows what runs rather than what someone wrote next to the route.
 * - `bearer`: a user's access token, `Authorization: Bearer <token>` (`bearerAuth`);
 * - `internal`: the service-to-service secret `X-Internal-Secret` (`INTERNAL_API_SECRET`);
 * - `admin`: the operator credential `ADMIN_TOKEN` (`operatorCredential`);
 * - `metrics`: the operator credential `METRICS_TOKEN` (`operatorCredential`);
 * - `service`: the login layer's credential `AUTH_SERVICE_TOKEN` (`operatorCredential`);
 * - `none`: no hook runs before the handler (a public route, or one that checks what it is
 *   sent itself, as the chat-platform webhook checks the platform's signature).
 */
export type RouteAuth = 'bearer' | 'internal' | 'admin' | 'metrics' | 'service' | 'none';

/**
 * A route hook that authenticates, tagged with its {@link RouteAuth}. Routes and mounts take only
 * these as hooks, so every route knows how it is authenticated.
 */
export type AuthHook = RouteHook & { readonly auth: Exclude<RouteAuth, 'none'> };

/** The hook of `bearerAuth`: after it ran, the request's `userId` is the token's user. */
export type BearerHook = RouteHook & { readonly auth: 'bearer' };

/**
 * Tags `check` as an authentication hook of kind `auth`. `check` itself is tagged and returned
 * (no wrapper, nothing added per request): give it a function made for this hook.
 */
export function authHook<Auth extends AuthHook['auth'], Check extends RouteHook>(
  auth: Auth,
  check: Check,
): Check & { readonly auth: Auth } {
  return Object.assign(check, { auth });
}

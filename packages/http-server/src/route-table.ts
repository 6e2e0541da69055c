import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * The routes of the server, matched by method and path: a map lookup for static paths, one
 * anchored expression per parameterised path (`/api/knowledge-bases/:id`). Express's router
 * walks every layer with path-to-regexp for every request; this was a third of the HTTP layer's
 * CPU per request (bench/http-stack.ts), so routes are dispatched here and Express keeps the
 * middleware in front of them.
 */
export class RouteTable {
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
export function mountFor<Mount extends { prefix: string }>(
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
export function run(
  chain: RequestHandler[],
  req: Request,
  res: Response,
  done: NextFunction,
): void {
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

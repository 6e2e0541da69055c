import type { RequestHandler } from 'express';
import { CHAT_MESSAGE_QUEUE } from '@agent-backend/chat-platform';
import { operatorCredential, pageHeaders, type RouteDocs } from '@agent-backend/http-server';
import { KB_INGEST_QUEUE } from '@agent-backend/knowledge';
import type { ServiceContext } from '@agent-backend/runtime';
import { SCHEDULED_TASKS_QUEUE } from '@agent-backend/scheduler';

/** Where the dashboard is served. */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';

/** Every queue of the service: what the worker processes, and the api, worker and tasks add to. */
export const SERVICE_QUEUES = [SCHEDULED_TASKS_QUEUE, CHAT_MESSAGE_QUEUE, KB_INGEST_QUEUE] as const;

/**
 * The BullMQ queue dashboard (bull-board) at `/admin/queues`, for operators: job counts, jobs by
 * state with their data and errors, retry, promote and clean. Mounted only when the jobs run on
 * BullMQ (the in-process engine has no queues to show) and `ADMIN_TOKEN` is set; otherwise the
 * path is the service's ordinary 404. Every request under the path, the UI's assets and its JSON
 * API included, needs the admin token, as a bearer token or as the password of HTTP Basic (any
 * user name), so a browser can open it; a user's access token is refused like any wrong secret.
 *
 * The UI and its assets come from `@bull-board/ui` in node_modules; its page's one link to a
 * web-font service is removed, so an operator's browser reaches nothing but this service. Every
 * answer under the path carries {@link DASHBOARD_HEADERS}.
 * bull-board, BullMQ and the queues are loaded at the dashboard's first request, not at start:
 * an api replica opens its job queue only when something needs it (docs/BENCHMARKS.md,
 * "Footprint"), and an admin token set for the operator routes alone costs nothing.
 * @returns whether the dashboard was mounted.
 */
export async function mountQueueDashboard(context: ServiceContext): Promise<boolean> {
  const { app, engines, config, logger } = context;
  const bullmq = engines.bullmq;
  if (!bullmq || !config.ADMIN_TOKEN) {
    // Not served (the ordinary 404), still documented.
    app.mount(QUEUE_DASHBOARD_PATH, { doc: DASHBOARD_DOC, enabled: false });
    return false;
  }
  const requireAdmin = operatorCredential('admin', config.ADMIN_TOKEN, 'bearer-or-basic', 'queues');
  let board: Promise<RequestHandler> | undefined;
  const atFirstRequest: RequestHandler = (req, res, next) => {
    (board ??= openBoard(bullmq)).then(
      (handler) => handler(req, res, next),
      (error: unknown) => {
        board = undefined; // the next request tries again (Redis back, say)
        next(error);
      },
    );
  };
  const withPageHeaders: RequestHandler = (_req, res, next) => {
    res.set(DASHBOARD_HEADERS);
    next();
  };
  app.mount(
    QUEUE_DASHBOARD_PATH,
    { onRequest: requireAdmin, doc: DASHBOARD_DOC },
    withPageHeaders,
    withoutWebFonts,
    atFirstRequest,
  );
  logger.info({ path: QUEUE_DASHBOARD_PATH, queues: SERVICE_QUEUES }, 'queue dashboard mounted');
  return true;
}

/** bull-board's router over {@link SERVICE_QUEUES}, the job queue opened if it was not yet. */
async function openBoard(
  bullmq: NonNullable<ServiceContext['engines']['bullmq']>,
): Promise<RequestHandler> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }, queues] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/express'),
    bullmq(),
  ]);
  const server = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  createBullBoard({
    queues: SERVICE_QUEUES.map((name) => new BullMQAdapter(queues.queue(name))),
    serverAdapter: server,
    options: { uiConfig: { boardTitle: 'agent-backend queues' } },
  });
  const router = server.getRouter() as RequestHandler & { disable(setting: string): void };
  router.disable('x-powered-by');
  return router;
}

const DASHBOARD_DOC: RouteDocs = {
  tag: 'operations',
  summary: 'The job queues dashboard (bull-board)',
  description:
    'Mounted only when the engine is BullMQ and `ADMIN_TOKEN` is set (otherwise 404): the ' +
    "service's queues, their jobs and outcomes, with bull-board's own pages and JSON API under " +
    'this prefix (`x-mount`). Needs `ADMIN_TOKEN` as a bearer token or as the password of ' +
    'basic authentication (a browser asks for it); a user access token is refused. Served ' +
    "with the service's Content-Security-Policy (scripts from the service only; inline styles " +
    "allowed, as bull-board renders them) and no framing (`frame-ancestors 'none'`, " +
    '`X-Frame-Options: DENY`). See docs/operations.md.',
  // Also when it is not mounted (no hook runs then).
  auth: 'admin',
  responses: { 200: { description: "The dashboard's page.", html: true } },
  errors: ['not_found'],
};

/**
 * The service's page headers (Content-Security-Policy, no framing) with one loosening: inline
 * styles. bull-board's page template styles its loading indicator with `style` attributes and a
 * `<style>`, and its components render `<style>` elements (the Redis logo's colours, the scroll
 * lock of its dialogs); hashes cannot name them all, and a hash would switch `'unsafe-inline'`
 * off. Scripts stay `'self'` only (no inline script, no `eval`), so injected markup still runs
 * nothing; everything else (stylesheets, images, translations, its highlighting worker) comes
 * from the service.
 */
const DASHBOARD_HEADERS = pageHeaders({ 'style-src': "'self' 'unsafe-inline'" });

/** bull-board's page links IBM Plex from a font CDN; without it the UI falls back to system fonts. */
const WEB_FONT_LINK = /<link[^>]+href="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^>]*>/g;

/** Removes {@link WEB_FONT_LINK} from the pages bull-board renders. */
const withoutWebFonts: RequestHandler = (_req, res, next) => {
  const render = res.render.bind(res);
  res.render = ((view: string, options?: object) => {
    render(view, options ?? {}, (error: Error | null, html?: string) => {
      if (error) return next(error);
      res.type('html').send((html ?? '').replace(WEB_FONT_LINK, ''));
    });
  }) as typeof res.render;
  next();
};

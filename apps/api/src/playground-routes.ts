import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pageHeaders, type RouteDocs } from '@agent-backend/http-server';
import { PlaygroundConfig } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

const require = createRequire(import.meta.url);
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));

/** The model name the demo model answers to (`pnpm demo`, apps/all-in-one/src/demo-model.ts). */
export const DEMO_MODEL_NAME = 'demo-scripted';

/**
 * The playground's pages may load only what the service itself serves (no CDN, no inline
 * script); images come from tool results as `data:` URLs; the API and `/ws/web` are same-origin:
 * the service's page policy as it is.
 */
const PAGE_HEADERS = pageHeaders();

/**
 * The playground (packages/playground) at `/playground/`, with `GET /` redirecting there: static
 * files of the built package, the client SDK's browser module at `/playground/sdk/` (the
 * playground is a client of the public API like any other), and `/playground/config.json`.
 */
export function registerPlaygroundRoutes({ app, config }: ServiceContext): void {
  const playground = packageDir('@agent-backend/playground');
  const sdk = packageDir('@agent-backend/client');
  const files = (summary: string): RouteDocs => ({
    tag: 'playground',
    summary,
    description:
      'Static files under this prefix (`x-mount`), with `Cache-Control: no-cache` and a strict ' +
      'Content-Security-Policy (nothing loaded from elsewhere). What is not there goes on to ' +
      'the routes, then 404.',
    responses: { 200: { description: 'A file.', text: 'the file, by its extension' } },
    errors: ['not_found'],
  });
  app.serveStatic(
    '/playground/sdk',
    join(sdk, 'dist'),
    PAGE_HEADERS,
    files("The client SDK's browser module, as the playground loads it"),
  );
  app.serveStatic(
    '/playground/js',
    join(playground, 'dist'),
    PAGE_HEADERS,
    files("The playground's scripts"),
  );
  app.serveStatic(
    '/playground',
    join(playground, 'static'),
    PAGE_HEADERS,
    files('The playground: its page and stylesheet'),
  );

  app.get(
    '/',
    {
      doc: {
        tag: 'playground',
        summary: 'Redirect to the playground',
        description:
          'The playground itself is static files under `/playground/` (its page, script and ' +
          "stylesheet, and the client SDK's browser module at `/playground/sdk/`), served with a " +
          "strict Content-Security-Policy and no framing (`frame-ancestors 'none'`, " +
          '`X-Frame-Options: DENY`).',
        responses: {
          302: { description: 'To `/playground/`.', headers: { Location: '`/playground/`' } },
        },
      },
    },
    (_request, reply) => reply.redirect(302, '/playground/'),
  );
  app.get(
    '/playground/config.json',
    {
      doc: {
        tag: 'playground',
        summary: 'What the playground offers on this service',
        responses: { 200: { description: 'The settings.', json: PlaygroundConfig } },
      },
    },
    () => {
      const demo = config.PLAYGROUND_DEMO_MODEL_URL;
      return {
        dev_tokens: config.DEV_TOKENS,
        demo_model: demo ? { base_url: demo, model_name: DEMO_MODEL_NAME } : null,
      } satisfies PlaygroundConfig;
    },
  );
}

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pageHeaders } from '@agent-backend/http-server';
import type { PlaygroundConfig } from '@agent-backend/protocol';
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
  app.serveStatic('/playground/sdk', join(sdk, 'dist'), PAGE_HEADERS);
  app.serveStatic('/playground/js', join(playground, 'dist'), PAGE_HEADERS);
  app.serveStatic('/playground', join(playground, 'static'), PAGE_HEADERS);

  app.get('/', (_request, reply) => reply.redirect(302, '/playground/'));
  app.get('/playground/config.json', () => {
    const demo = config.PLAYGROUND_DEMO_MODEL_URL;
    return {
      dev_tokens: config.DEV_TOKENS,
      demo_model: demo ? { base_url: demo, model_name: DEMO_MODEL_NAME } : null,
    } satisfies PlaygroundConfig;
  });
}

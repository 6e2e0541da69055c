import { Writable } from 'node:stream';
import { afterEach } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import { createHttpServer, type CreateHttpServerOptions, type HttpServer } from '../index.js';

/**
 * The tests' server: `serve(routes)` makes one with a silent logger (and `options`), lets the
 * test register its routes, and listens on a free loopback port; it is closed after each test.
 * Call at the top of a test file.
 */
export function useTestServer(
  options: Omit<CreateHttpServerOptions, 'logger'> = {},
): (routes: (app: HttpServer) => void) => Promise<{ url: string }> {
  let app: HttpServer | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  return async (routes) => {
    const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
    app = createHttpServer({ logger: createLogger({ destination: quiet }), ...options });
    routes(app);
    return { url: await app.listen({ port: 0, host: '127.0.0.1' }) };
  };
}

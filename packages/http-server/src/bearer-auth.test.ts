import { Writable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import { bearerAuth, createHttpServer, type HttpServer } from './index.js';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(routes: (app: HttpServer) => void) {
  const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
  app = createHttpServer({ logger: createLogger({ destination: quiet }), bodyLimit: 1024 });
  routes(app);
  return { url: await app.listen({ port: 0, host: '127.0.0.1' }) };
}

it('bearerAuth sets the user from a verified token and answers 401 otherwise', async () => {
  const { url } = await serve((a) => {
    const verify = async (token: string) => {
      if (token === 'good') return { userId: 'u1' };
      throw new Error('token has expired');
    };
    a.get('/me', { preHandler: bearerAuth(verify) }, async (request) => ({
      // Typed: after the bearer hook the request's user is a string (no `!`).
      user: request.userId satisfies string,
    }));
    a.get('/anyone', {}, async (request) => ({
      // @ts-expect-error -- without the hook there may be no user.
      user: request.userId satisfies string,
    }));
  });
  const call = (authorization?: string) =>
    fetch(`${url}/me`, { headers: authorization ? { authorization } : {} });
  const ok = await call('Bearer good');
  expect(await ok.json()).toEqual({ user: 'u1' });
  for (const [header, message, reason] of [
    [undefined, 'missing Authorization header', 'invalid_request'],
    ['Basic abc', 'Authorization header must be "Bearer <access token>"', 'invalid_request'],
    ['Bearer bad', 'token has expired', 'invalid_token'],
  ] as const) {
    const res = await call(header);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer error="${reason}"`);
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message } });
  }
});

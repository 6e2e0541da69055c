import { Writable } from 'node:stream';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import { createHttpServer, operatorCredential, type HttpServer } from './index.js';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

type Observed = { method: string; route: string | undefined; status: number; seconds: number };

async function serve(routes: (app: HttpServer) => void) {
  const observed: Observed[] = [];
  const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
  app = createHttpServer({
    logger: createLogger({ destination: quiet }),
    observe: (method, route, status, seconds) => observed.push({ method, route, status, seconds }),
  });
  routes(app);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  /** Waits for the observation of the request just answered (written when its response closes). */
  const next = async (count: number) => {
    while (observed.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
    return observed[count - 1]!;
  };
  return { url, observed, next };
}

describe('observe: one observation per answered request', () => {
  it('labels a request with the template that matched, or undefined when none did', async () => {
    const { url, next } = await serve((a) => {
      a.get('/items/:id', (request) => ({ id: request.params.id }));
      a.delete('/items/:id/parts/:part', (_request, reply) => void reply.status(204).end());
      a.get('/plain', () => ({ ok: true }));
    });
    expect((await fetch(`${url}/items/abc-123`)).status).toBe(200);
    expect(await next(1)).toMatchObject({ method: 'GET', route: '/items/:id', status: 200 });
    expect((await fetch(`${url}/items/x/parts/y`, { method: 'DELETE' })).status).toBe(204);
    expect(await next(2)).toMatchObject({ route: '/items/:id/parts/:part', status: 204 });
    expect((await fetch(`${url}/plain?q=1`)).status).toBe(200);
    expect(await next(3)).toMatchObject({ route: '/plain' });
    expect((await fetch(`${url}/items/abc-123/unknown`)).status).toBe(404);
    expect(await next(4)).toMatchObject({ method: 'GET', route: undefined, status: 404 });
    expect((await fetch(`${url}/healthz`, { method: 'HEAD' })).status).toBe(200);
    expect(await next(5)).toMatchObject({ method: 'HEAD', route: '/healthz' });
    const seconds = (await next(5)).seconds;
    expect(seconds).toBeGreaterThanOrEqual(0);
  });
});

describe('mount: a sub-application under a path prefix', () => {
  it('gets its prefix and everything below it, relative, ahead of the 404', async () => {
    const sub = express.Router();
    sub.get('/', (req, res) => void res.json({ at: 'root', baseUrl: req.baseUrl }));
    sub.get('/static/app.js', (req, res) => void res.type('js').send(`// ${req.url}`));
    const { url, next } = await serve((a) => {
      a.mount('/admin/queues', sub);
      a.get('/admin/queuesX', () => ({ route: true }));
    });
    expect(await (await fetch(`${url}/admin/queues`)).json()).toEqual({
      at: 'root',
      baseUrl: '/admin/queues',
    });
    expect(await next(1)).toMatchObject({ route: '/admin/queues', status: 200 });
    expect(await (await fetch(`${url}/admin/queues/?x=1`)).json()).toMatchObject({ at: 'root' });
    expect(await (await fetch(`${url}/admin/queues/static/app.js`)).text()).toBe(
      '// /static/app.js',
    );
    // Not below the prefix: the service's routes.
    expect(await (await fetch(`${url}/admin/queuesX`)).json()).toEqual({ route: true });
    // Below it but unknown to the sub-application: the service's 404 shape.
    const missing = await fetch(`${url}/admin/queues/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('authenticates every request under the prefix with its hook, and lists its auth', async () => {
    const sub = express.Router();
    let reached = 0;
    sub.use((_req, res) => {
      reached += 1;
      res.json({ ok: true });
    });
    const { url } = await serve((a) => {
      a.mount(
        '/admin/queues',
        { onRequest: operatorCredential('admin', 'tok', 'bearer', 'q') },
        sub,
      );
      a.mount('/open', sub);
    });
    const refused = await fetch(`${url}/admin/queues/api/queues`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="q"');
    expect(await refused.json()).toMatchObject({ error: { code: 'unauthorized' } });
    expect(reached).toBe(0);
    const allowed = await fetch(`${url}/admin/queues/api/queues`, {
      headers: { authorization: 'Bearer tok' },
    });
    expect(await allowed.json()).toEqual({ ok: true });
    expect((await fetch(`${url}/open`)).status).toBe(200);
    expect(app!.mounts()).toEqual([
      { prefix: '/admin/queues', auth: 'admin' },
      { prefix: '/open', auth: 'none' },
    ]);
  });

  it('refuses a prefix that is not a plain path', async () => {
    await serve(() => {});
    for (const prefix of ['admin', '/admin/', '/a?b', '']) {
      expect(() => app!.mount(prefix, express.Router())).toThrow(/invalid mount prefix/);
    }
  });
});

describe('operatorCredential', () => {
  const TOKEN = 'operator-token-0123456789';
  const request = (authorization?: string) =>
    ({ headers: authorization ? { authorization } : {} }) as Parameters<
      ReturnType<typeof operatorCredential>
    >[0];
  const basic = (user: string, password: string) =>
    `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  it('accepts the bearer token, and Basic only where allowed', () => {
    const bearer = operatorCredential('metrics', TOKEN, 'bearer', 'metrics');
    const both = operatorCredential('admin', TOKEN, 'bearer-or-basic', 'queues');
    expect([bearer.auth, both.auth]).toEqual(['metrics', 'admin']);
    expect(() => bearer(request(`Bearer ${TOKEN}`))).not.toThrow();
    expect(() => bearer(request(`bearer  ${TOKEN}`))).not.toThrow();
    expect(() => both(request(`Bearer ${TOKEN}`))).not.toThrow();
    expect(() => both(request(basic('anyone', TOKEN)))).not.toThrow();
    expect(() => both(request(basic('', TOKEN)))).not.toThrow();
    expect(() => bearer(request(basic('anyone', TOKEN)))).toThrow();
  });

  it('refuses anything else with 401 and the scheme’s challenge', () => {
    const both = operatorCredential('admin', TOKEN, 'bearer-or-basic', 'queues');
    for (const header of [
      undefined,
      '',
      'Bearer',
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Bearer ${TOKEN}0`,
      basic(TOKEN, ''),
      `Basic ${Buffer.from(TOKEN).toString('base64')}`,
      `Token ${TOKEN}`,
    ]) {
      try {
        both(request(header));
        expect.unreachable(`accepted ${header}`);
      } catch (error) {
        expect(error).toMatchObject({
          status: 401,
          code: 'unauthorized',
          headers: { 'www-authenticate': 'Basic realm="queues"' },
        });
      }
    }
    expect(() => operatorCredential('metrics', TOKEN, 'bearer', 'metrics')(request())).toThrow(
      expect.objectContaining({ headers: { 'www-authenticate': 'Bearer realm="metrics"' } }),
    );
  });
});

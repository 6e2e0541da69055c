import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import { AppError, authHook, createHttpServer, type HttpServer } from './index.js';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('a route limit', () => {
  it('runs after authentication and before the body is read; its refusal is the answer', async () => {
    const seen: string[] = [];
    const user = authHook('internal', (req) => {
      seen.push('auth');
      req.userId = String(req.headers['x-user']);
    });
    let calls = 0;
    const limit = (req: { userId?: string }) => {
      seen.push(`limit:${req.userId}`);
      if (++calls > 1) {
        throw new AppError('rate_limited', 'too many', undefined, { 'Retry-After': '7' });
      }
    };
    app = createHttpServer({ logger: createLogger({ level: 'silent' }), bodyLimit: 16 });
    app.post(
      '/limited',
      {
        onRequest: user,
        limit,
        doc: { tag: 't', summary: 'x', responses: { 200: { description: 'ok' } } },
      },
      () => ({ ok: true }),
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const post = (body: string) =>
      fetch(`${url}/limited`, {
        method: 'POST',
        headers: { 'x-user': 'u1', 'content-type': 'application/json' },
        body,
      });
    expect((await post('{}')).status).toBe(200);
    // The refusal comes before the oversized body would have been refused.
    const refused = await post(JSON.stringify({ big: 'x'.repeat(64) }));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(await refused.json()).toEqual({ error: { code: 'rate_limited', message: 'too many' } });
    expect(seen).toEqual(['auth', 'limit:u1', 'auth', 'limit:u1']);
    expect(app.documented().find((r) => r.path === '/limited')?.errors).toEqual(['rate_limited']);
  });
});

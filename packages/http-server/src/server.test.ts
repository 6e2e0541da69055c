import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '@agent-backend/logger';
import {
  AppError,
  authHook,
  bearerAuth,
  createHttpServer,
  OFF_THREAD_BODY_BYTES,
  parseInput,
  type CreateHttpServerOptions,
  type HttpServer,
} from './index.js';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(
  options: Partial<CreateHttpServerOptions> = {},
  routes?: (app: HttpServer) => void,
) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  app = createHttpServer({ logger: createLogger({ destination }), bodyLimit: 1024, ...options });
  routes?.(app);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, lines, logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const Body = z.object({ name: z.string().min(1), count: z.number().int().default(1) });

describe('createHttpServer', () => {
  it('logs exactly one line per request, with its request id, and never a secret', async () => {
    const { url, lines, logs } = await serve({}, (a) => {
      a.post('/echo', async (request) => parseInput(Body, request.body));
    });
    const secrets = ['Bearer eyJ.secret.sig', 'internal-s3cret', 'wss-token-value', 'sk-api-key'];
    const res = await fetch(`${url}/echo?user_id=u1&token=${secrets[2]}`, {
      method: 'POST',
      headers: {
        authorization: secrets[0]!,
        'x-internal-secret': secrets[1]!,
        'content-type': 'application/json',
        'x-request-id': 'req-abc.1',
      },
      body: JSON.stringify({ name: 'n', llm_config: { apiKey: secrets[3] } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-abc.1');
    expect(await res.json()).toEqual({ name: 'n', count: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const requestLines = logs().filter((l) => l.msg === 'request');
    expect(requestLines).toHaveLength(1);
    expect(requestLines[0]).toMatchObject({
      reqId: 'req-abc.1',
      method: 'POST',
      status: 200,
      url: '/echo?user_id=u1&token=[REDACTED]',
    });
    for (const secret of secrets) expect(lines.join('\n')).not.toContain(secret);
  });

  it('generates a request id when the caller sends none or an unsafe one', async () => {
    const { url } = await serve();
    const plain = await fetch(`${url}/healthz`);
    expect(plain.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const unsafe = await fetch(`${url}/healthz`, { headers: { 'x-request-id': 'a b\tc' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers bad input with the documented error bodies', async () => {
    const { url } = await serve({}, (a) => {
      a.post('/echo', async (request) => parseInput(Body, request.body));
      a.get('/conflict', async () => {
        throw new AppError('conflict', 'already running', { session_id: 's1' });
      });
      a.get('/boom', async () => {
        throw new Error('database password=hunter2 leaked?');
      });
    });
    const post = (body: string, type = 'application/json') =>
      fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': type }, body });

    const invalid = await post(JSON.stringify({ name: '', count: 1.5 }));
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({
      error: {
        code: 'invalid_request',
        message: 'invalid request body',
        details: [
          { path: 'name', message: expect.any(String) },
          { path: 'count', message: expect.any(String) },
        ],
      },
    });
    const notJson = await post('{"name":');
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: 'invalid_json' } });
    const tooLarge = await post(JSON.stringify({ name: 'x'.repeat(2000) }));
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toMatchObject({ error: { code: 'payload_too_large' } });
    const wrongType = await post('name=x', 'text/plain');
    expect(wrongType.status).toBe(415);

    const conflict = await fetch(`${url}/conflict`);
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toEqual({
      error: { code: 'conflict', message: 'already running', details: { session_id: 's1' } },
    });
    const boom = await fetch(`${url}/boom`);
    expect(boom.status).toBe(500);
    expect(await boom.json()).toEqual({
      error: { code: 'internal_error', message: 'internal server error' },
    });
    const missing = await fetch(`${url}/nope?token=x`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      error: { code: 'not_found', message: 'no route for GET /nope' },
    });
  });

  it('validates the body schema a route declares after authentication and lists its routes', async () => {
    const seen: unknown[] = [];
    const { url } = await serve({}, (a) => {
      a.post(
        '/typed',
        {
          body: Body,
          preHandler: authHook('bearer', (request) => {
            if (request.headers.authorization !== 'Bearer ok') {
              throw new AppError('unauthorized', 'no');
            }
          }),
        },
        async (request) => {
          seen.push(request.body);
          return { name: request.body.name, count: request.body.count };
        },
      );
      a.post('/raw', { rawBody: true }, async () => ({}));
      a.delete('/items/:id', async () => undefined);
    });
    const post = (body: unknown, auth = 'Bearer ok') =>
      fetch(`${url}/typed`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: auth },
        body: JSON.stringify(body),
      });

    // Authentication first: an anonymous invalid body is 401, not 400.
    expect((await post({ name: '' }, 'Bearer no')).status).toBe(401);
    const invalid = await post({ name: '' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({
      error: {
        code: 'invalid_request',
        message: 'invalid request body',
        details: [{ path: 'name', message: expect.any(String) }],
      },
    });
    const valid = await post({ name: 'n', extra: true });
    expect(await valid.json()).toEqual({ name: 'n', count: 1 });
    expect(seen).toEqual([{ name: 'n', count: 1 }]);

    expect(app!.routes()).toEqual([
      { method: 'GET', path: '/healthz', auth: 'none', rawBody: false },
      { method: 'GET', path: '/readyz', auth: 'none', rawBody: false },
      { method: 'POST', path: '/typed', auth: 'bearer', body: Body, rawBody: false },
      { method: 'POST', path: '/raw', auth: 'none', rawBody: true },
      { method: 'DELETE', path: '/items/:id', auth: 'none', rawBody: false },
    ]);
    expect(app!.routes()[2]!.body).toBe(Body);
  });

  it('validates path parameters and the query with the schemas a route declares, after the body', async () => {
    const Params = z.object({ id: z.string().max(3) });
    const Query = z.object({ limit: z.coerce.number().int().min(1).default(10) });
    const internal = authHook('internal', () => {});
    const { url } = await serve({}, (a) => {
      a.get('/items/:id', { params: Params, query: Query }, async (request) => {
        const limit: number = request.query.limit;
        return { id: request.params.id, limit };
      });
      a.post(
        '/items/:id',
        { body: Body, params: Params, query: Query, onRequest: internal },
        async (request) => ({ ...request.body, ...request.params, ...request.query }),
      );
    });
    expect(await (await fetch(`${url}/items/abc`)).json()).toEqual({ id: 'abc', limit: 10 });
    expect(await (await fetch(`${url}/items/abc?limit=5&x=1`)).json()).toEqual({
      id: 'abc',
      limit: 5,
    });
    const error = (message: string, path: string) => ({
      error: { code: 'invalid_request', message, details: [{ path, message: expect.any(String) }] },
    });
    const longId = await fetch(`${url}/items/abcd`);
    expect(longId.status).toBe(400);
    expect(await longId.json()).toEqual(error('invalid request path', 'id'));
    const badLimit = await fetch(`${url}/items/abc?limit=0`);
    expect(badLimit.status).toBe(400);
    expect(await badLimit.json()).toEqual(error('invalid request query', 'limit'));

    // Body, then path, then query: the first invalid one is the answer.
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect(await (await post('/items/abcd?limit=0', { name: '' })).json()).toEqual(
      error('invalid request body', 'name'),
    );
    expect(await (await post('/items/abcd?limit=0', { name: 'n' })).json()).toEqual(
      error('invalid request path', 'id'),
    );
    expect(await (await post('/items/abc?limit=0', { name: 'n' })).json()).toEqual(
      error('invalid request query', 'limit'),
    );
    expect(await (await post('/items/abc?limit=2', { name: 'n' })).json()).toEqual({
      name: 'n',
      count: 1,
      id: 'abc',
      limit: 2,
    });

    const [get, postRoute] = app!.routes().slice(2);
    expect(get).toEqual({
      method: 'GET',
      path: '/items/:id',
      auth: 'none',
      params: Params,
      query: Query,
      rawBody: false,
    });
    expect(postRoute).toMatchObject({ auth: 'internal', body: Body, params: Params, query: Query });
    expect(get!.query).toBe(Query);
    expect(get!.params).toBe(Params);
  });

  it('refuses a route with two authentication hooks', async () => {
    await serve();
    const hook = authHook('bearer', () => {});
    expect(() => app!.get('/twice', { onRequest: hook, preHandler: hook }, () => ({}))).toThrow(
      /GET \/twice: one hook, onRequest or preHandler/,
    );
  });

  it('reads large bodies on its body thread with the same answers as small ones', async () => {
    // Bodies from OFF_THREAD_BODY_BYTES up are decoded, parsed and checked off the event loop.
    const big = 'é'.repeat(OFF_THREAD_BODY_BYTES);
    const { url } = await serve({ bodyLimit: 8 * OFF_THREAD_BODY_BYTES }, (a) => {
      a.post('/echo', async (request) => {
        const body = parseInput(Body.extend({ text: z.string() }), request.body);
        return { length: body.text.length, last: body.text.at(-1) };
      });
    });
    const post = (body: string) =>
      fetch(`${url}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
    const ok = await post(JSON.stringify({ name: 'n', text: `${big}z` }));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ length: big.length + 1, last: 'z' });
    const lone = await post(JSON.stringify({ name: 'n', text: `${big}\uD800` }));
    expect(lone.status).toBe(400);
    expect(await lone.json()).toMatchObject({
      error: { code: 'invalid_request', details: [{ path: 'text' }] },
    });
    const nul = await post(`{"name":"n","text":"${big}\\u0000"}`);
    expect(nul.status).toBe(400);
    expect(await nul.json()).toMatchObject({
      error: {
        code: 'invalid_request',
        details: [{ path: 'text', message: expect.stringMatching(/NUL/) }],
      },
    });
    const malformed = await post(`{"name":"n","text":"${big}`);
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: 'invalid_json' } });
  });

  it("refuses a deeply nested large body with 400 and keeps reading other users' large bodies", async () => {
    // 100,000 levels in 256 KiB killed the body thread (posting the value back
    // overflowed its stack), so the attacker got a 500 and so did every large body behind it.
    const depth = OFF_THREAD_BODY_BYTES / 2 + 1000;
    const deep = `{"name":"n","deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const big = 'é'.repeat(OFF_THREAD_BODY_BYTES);
    const { url } = await serve({ bodyLimit: 8 * OFF_THREAD_BODY_BYTES }, (a) => {
      const verify = async (token: string) => ({ userId: token });
      a.post('/echo', { preHandler: bearerAuth(verify) }, async (request) => {
        const body = parseInput(Body.extend({ text: z.string() }), request.body);
        return { user: request.userId, length: body.text.length };
      });
    });
    const post = (user: string, body: string) =>
      fetch(`${url}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}` },
        body,
      });
    const normal = JSON.stringify({ name: 'n', text: big });
    for (let round = 0; round < 3; round++) {
      const refused = await post('attacker', deep);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        error: {
          code: 'invalid_request',
          details: [{ message: 'nests deeper than 64 levels' }],
        },
      });
      const ok = await post('other', normal);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ user: 'other', length: big.length });
    }
    // Sent together, the other user's bodies wait on the same thread behind the attacker's.
    const answers = await Promise.all(
      [0, 1, 2, 3].flatMap(() => [post('attacker', deep), post('other', normal)]),
    );
    expect(answers.map((answer) => answer.status)).toEqual([
      400, 200, 400, 200, 400, 200, 400, 200,
    ]);
  });

  it('reports readiness per dependency and 503 when one fails', async () => {
    let redisUp = true;
    const { url } = await serve({
      readiness: {
        postgres: async () => {},
        redis: async () => {
          if (!redisUp) throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
        },
      },
    });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { postgres: { ok: true }, redis: { ok: true } },
    });
    redisUp = false;
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      status: 'not_ready',
      checks: {
        postgres: { ok: true },
        redis: { ok: false, error: 'connect ECONNREFUSED 127.0.0.1:6379' },
      },
    });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});

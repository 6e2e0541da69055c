import { Writable } from 'node:stream';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '@agent-backend/logger';
import { authHook, bearerAuth, createHttpServer, type HttpServer } from './index.js';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

function server(): HttpServer {
  const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
  app = createHttpServer({ logger: createLogger({ destination: quiet }) });
  return app;
}

const Body = z.object({ name: z.string() });
const Params = z.object({ id: z.string() });

describe('documented routes', () => {
  it('lists each documented registration with the method, path, schemas and credential it uses', () => {
    const a = server();
    const requireUser = bearerAuth(async () => ({ userId: 'u' }));
    const doc = { tag: 'things', summary: 'A thing', responses: { 200: { description: 'It.' } } };
    a.post('/things/:id', { body: Body, params: Params, preHandler: requireUser, doc }, () => ({}));
    a.get('/plain', () => ({}));
    a.post(
      '/hook',
      { rawBody: true, doc: { ...doc, auth: 'webhook', rawBody: Body } },
      (request) => request.body as string,
    );
    a.mount('/files', { doc: { ...doc, summary: 'Files' } }, express.Router());

    const [healthz, readyz, ...ours] = a.documented();
    expect([healthz!.path, readyz!.path]).toEqual(['/healthz', '/readyz']);
    expect(ours).toEqual([
      {
        ...doc,
        method: 'POST',
        path: '/things/:id',
        auth: 'bearer',
        enabled: true,
        body: Body,
        params: Params,
      },
      { ...doc, auth: 'webhook', rawBody: Body, method: 'POST', path: '/hook', enabled: true },
      {
        ...doc,
        summary: 'Files',
        method: 'GET',
        path: '/files',
        mount: true,
        auth: 'none',
        enabled: true,
      },
    ]);
  });

  it('documents a route or mount registered with enabled: false and answers its path with the 404', async () => {
    const a = server();
    const doc = { tag: 'ops', summary: 'Off here', responses: { 200: { description: 'On.' } } };
    let ran = false;
    a.post('/dev/tokens', { body: Body, enabled: false, doc }, () => {
      ran = true;
      return {};
    });
    const admin = authHook('admin', () => undefined);
    a.mount('/admin/queues', { onRequest: admin, enabled: false, doc }, express.Router());
    const url = await a.listen({ port: 0, host: '127.0.0.1' });

    expect(a.documented().slice(2)).toEqual([
      { ...doc, method: 'POST', path: '/dev/tokens', auth: 'none', enabled: false, body: Body },
      { ...doc, method: 'GET', path: '/admin/queues', mount: true, auth: 'admin', enabled: false },
    ]);
    expect(a.routes().map((route) => route.path)).toEqual(['/healthz', '/readyz']);
    expect(a.mounts()).toEqual([]);

    const res = await fetch(`${url}/dev/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: { code: 'not_found', message: 'no route for POST /dev/tokens' },
    });
    expect((await fetch(`${url}/admin/queues/page`)).status).toBe(404);
    expect(ran).toBe(false);
  });
});

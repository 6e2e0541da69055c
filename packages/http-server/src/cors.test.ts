import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import { AppError, createHttpServer, type HttpServer } from './index.js';

const ALLOWED = 'http://127.0.0.1:5173';
const OTHER = 'http://127.0.0.1:6000';

let app: HttpServer | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(corsOrigins?: string[]) {
  const quiet = new Writable({ write: (_chunk, _enc, done) => done() });
  app = createHttpServer({
    logger: createLogger({ destination: quiet }),
    ...(corsOrigins ? { corsOrigins } : {}),
  });
  app.get('/api/things', () => ({ things: [] }));
  app.post('/api/things', () => {
    throw new AppError('invalid_request', 'no');
  });
  // An operator's Express route, answered after no route of ours matched.
  app.express.get('/legacy', (_req, res) => {
    res.json({ legacy: true });
  });
  return app.listen({ port: 0, host: '127.0.0.1' });
}

const preflight = (url: string, origin: string, method = 'POST') =>
  fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type, last-event-id',
    },
  });

describe('CORS', () => {
  it('answers a preflight from an allowed origin, with the headers an SSE client sends', async () => {
    const base = await serve([ALLOWED]);
    const res = await preflight(`${base}/api/things`, ALLOWED);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    const methods = res.headers.get('access-control-allow-methods')!.split(/,\s*/);
    expect(methods).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'DELETE']));
    const headers = res.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/);
    expect(headers).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'last-event-id']),
    );
    expect(res.headers.get('vary')).toMatch(/origin/i);
  });

  it('names the origin on real answers: routes, errors, 404s and Express fallthrough', async () => {
    const base = await serve([ALLOWED]);
    const answers = await Promise.all([
      fetch(`${base}/api/things`, { headers: { origin: ALLOWED } }),
      fetch(`${base}/api/things`, { method: 'POST', headers: { origin: ALLOWED } }),
      fetch(`${base}/api/nothing-here`, { headers: { origin: ALLOWED } }),
      fetch(`${base}/legacy`, { headers: { origin: ALLOWED } }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 400, 404, 200]);
    for (const res of answers) {
      expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('access-control-expose-headers')).toMatch(/x-request-id/i);
    }
  });

  it('gives another origin no CORS header, and its preflight is not answered', async () => {
    const base = await serve([ALLOWED]);
    const pre = await preflight(`${base}/api/things`, OTHER);
    expect(pre.status).toBe(404);
    const res = await fetch(`${base}/api/things`, { headers: { origin: OTHER } });
    expect(res.status).toBe(200);
    for (const answer of [pre, res]) {
      const cors = [...answer.headers.keys()].filter((name) => name.startsWith('access-control-'));
      expect(cors).toEqual([]);
    }
  });

  it('adds nothing when no origin is configured', async () => {
    const base = await serve();
    const pre = await preflight(`${base}/api/things`, ALLOWED);
    expect(pre.status).toBe(404);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    const res = await fetch(`${base}/api/things`, { headers: { origin: ALLOWED } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

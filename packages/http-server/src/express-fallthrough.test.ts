import express, { type NextFunction, type Request, type Response } from 'express';
import { describe, expect, it } from 'vitest';
import { AppError } from './index.js';
import { useTestServer } from './testing/test-server.js';

const serve = useTestServer();

describe('Express middleware added to the application', () => {
  it('runs for a request no route matches, and what it passes on is the JSON 404', async () => {
    const seen: string[] = [];
    const { url } = await serve((a) => {
      a.get('/ours', () => ({ ours: true }));
      a.express.use((req, _res, next) => {
        seen.push(`${req.method} ${req.url}`);
        next();
      });
      const legacy = express.Router();
      legacy.get('/hello', (req, res) => void res.json({ legacy: true, id: req.id }));
      a.express.use('/legacy', legacy);
    });

    const legacy = await fetch(`${url}/legacy/hello`, { headers: { 'x-request-id': 'abc-1' } });
    expect(legacy.status).toBe(200);
    // The service's request id reaches (and is echoed for) what Express answers.
    expect(legacy.headers.get('x-request-id')).toBe('abc-1');
    expect(await legacy.json()).toEqual({ legacy: true, id: 'abc-1' });

    const missing = await fetch(`${url}/nowhere?x=1`, { method: 'POST' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await missing.json()).toEqual({
      error: { code: 'not_found', message: 'no route for POST /nowhere' },
    });

    // A route of ours answers without the Express middleware seeing the request.
    expect(await (await fetch(`${url}/ours`)).json()).toEqual({ ours: true });
    expect(seen).toEqual(['GET /legacy/hello', 'POST /nowhere?x=1']);
  });

  it("answers what such middleware passes on as an error in the service's shape", async () => {
    const { url } = await serve((a) => {
      a.express.use('/refuse', (_req, _res, next) => next(new AppError('forbidden', 'not here')));
      a.express.use('/break', () => {
        throw new Error('a bug');
      });
    });
    const refused = await fetch(`${url}/refuse`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: { code: 'forbidden', message: 'not here' } });
    const broken = await fetch(`${url}/break`);
    expect(broken.status).toBe(500);
    expect(await broken.json()).toEqual({
      error: { code: 'internal_error', message: 'internal server error' },
    });
  });

  it('lets error middleware added to the application answer errors as in Express', async () => {
    const { url } = await serve((a) => {
      a.get('/fails', () => {
        throw new Error('a bug');
      });
      a.express.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
        res.status(502).json({ own: error.message });
      });
    });
    const res = await fetch(`${url}/fails`);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ own: 'a bug' });
  });
});

/**
 * Against the running all-in-one: what the HTTP layer itself refuses
 * (a malformed percent-encoding, an over-long path parameter, oversized headers, a document over
 * its 10 MiB limit) answers in the service's `{ error: { code, message } }` shape, and a secret sent as a query parameter never
 * reaches the log.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { accessToken } from '../agent-helpers.js';
import { keyFiles, requireBuild, tempDir } from '../helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const SECRET = 'internal-s3cret-9f1c77';

/** A raw request (fetch refuses some of what is sent here); resolves with status and body. */
function send(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

const errorShape = { error: { code: expect.any(String), message: expect.any(String) } };

describe('HTTP edges', () => {
  const keys = keyFiles();
  let service: ServiceProcess;
  let token: string;

  beforeAll(async () => {
    requireBuild(MAIN);
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('security-http'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        INTERNAL_API_SECRET: SECRET,
      },
    });
    token = await accessToken(keys.privateKey, 'sec-user');
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
  });

  it('answers a malformed percent-encoding in the path with 400 invalid_url', async () => {
    const res = await send(service.port, '/api/agent/sessions/%E0%A4%A/stream', {
      authorization: `Bearer ${token}`,
    });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: 'invalid_url', message: expect.stringContaining('percent-encoding') },
    });
    // The internal endpoints too, before their secret is even checked.
    const internal = await send(service.port, '/scheduled-task/%zz');
    expect(internal.status).toBe(400);
    expect(JSON.parse(internal.body)).toMatchObject({ error: { code: 'invalid_url' } });
  });

  it('answers an over-long path parameter in the documented shape, not 414', async () => {
    for (const path of [
      `/api/agent/sessions/${'s'.repeat(300)}/stream`,
      `/scheduled-task/${'t'.repeat(300)}`,
      `/api/knowledge-bases/${'k'.repeat(300)}`,
    ]) {
      const res = await send(service.port, path, {
        authorization: `Bearer ${token}`,
        'x-internal-secret': SECRET,
      });
      expect(res.status, path).toBeGreaterThanOrEqual(400);
      expect(res.status, path).toBeLessThan(500);
      expect(JSON.parse(res.body), path).toEqual(errorShape);
    }
  });

  it('answers headers over the limit with 431 in the documented shape', async () => {
    const res = await send(service.port, '/healthz', { 'x-padding': 'p'.repeat(20_000) });
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: 'headers_too_large', message: expect.any(String) },
    });
    // The server is fine afterwards.
    expect((await send(service.port, '/healthz')).status).toBe(200);
  });

  it('answers an 11 MiB document with 413 payload_too_large and stores nothing', async () => {
    const api = (path: string, body?: string | Buffer) =>
      fetch(`${service.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
    const base = (await (
      await api('/api/knowledge-bases', JSON.stringify({ name: 'big' }))
    ).json()) as {
      id: string;
    };
    const content = 'x'.repeat(11 * 1024 * 1024);
    const res = await api(
      `/api/knowledge-bases/${base.id}/documents`,
      Buffer.from(JSON.stringify({ name: 'too-big.txt', content, type: 'text' })),
    );
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error: { code: 'payload_too_large', message: expect.any(String) },
    });
    // Nothing was stored: the base still has no document, and a small one is still accepted.
    const list = (await (await api(`/api/knowledge-bases/${base.id}/documents`)).json()) as {
      documents: unknown[];
    };
    expect(list.documents).toEqual([]);
    const small = await api(
      `/api/knowledge-bases/${base.id}/documents`,
      JSON.stringify({ name: 'small.txt', content: 'fits', type: 'text' }),
    );
    expect(small.status).toBe(202);
  });

  it('never logs a secret sent as a query parameter, whatever its name', async () => {
    const values = {
      'x-internal-secret': SECRET,
      api_key: 'sk-query-key-31b2',
      db_password: 'hunter2-query',
      refresh_token: 'rt_query_token_77',
    };
    const query = Object.entries(values)
      .map(([name, value]) => `${name}=${encodeURIComponent(value)}`)
      .join('&');
    const res = await send(service.port, `/scheduled-task/sync?${query}`, {}, 'POST');
    expect(res.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const log = service.stdout.join('\n');
    const line = service.stdout
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && String(l.url).startsWith('/scheduled-task/sync?'));
    expect(line?.url).toBe(
      '/scheduled-task/sync?x-internal-secret=[REDACTED]&api_key=[REDACTED]' +
        '&db_password=[REDACTED]&refresh_token=[REDACTED]',
    );
    for (const value of Object.values(values)) expect(log).not.toContain(value);
  });
});

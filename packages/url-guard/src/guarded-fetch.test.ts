import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedirectRefusedError, UrlRefusedError } from './errors.js';
import { GuardedFetch } from './guarded-fetch.js';
import { createUrlGuard, type Resolve } from './url-guard.js';

/** A real HTTP server that counts the TCP connections it accepted. */
interface CountingServer {
  readonly server: Server;
  readonly port: number;
  connections: number;
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
}

async function listen(
  host: string,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  port = 0,
): Promise<CountingServer> {
  const state = { connections: 0, requests: [] } as unknown as CountingServer;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      state.requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res);
    });
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return Object.assign(state, { server, port: (server.address() as AddressInfo).port });
}

const close = (s: CountingServer) =>
  new Promise<void>((resolve) => {
    s.server.closeAllConnections();
    s.server.close(() => resolve());
  });

describe('GuardedFetch', () => {
  let app: CountingServer;
  /** Same port as `app`, on another loopback address: where rebinding and redirects try to go. */
  let hidden: CountingServer;
  const clients: GuardedFetch[] = [];
  const client = (...args: ConstructorParameters<typeof GuardedFetch>) => {
    const c = new GuardedFetch(...args);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    app = await listen('127.0.0.1', (req, res) => {
      const url = new URL(req.url!, 'http://x');
      const to = url.searchParams.get('to');
      if (url.pathname === '/redirect' && to) {
        res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: to }).end();
      } else if (url.pathname === '/gzip') {
        res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync('compressed hello'));
      } else if (url.pathname === '/big') {
        res.writeHead(200).end('x'.repeat(100_000));
      } else if (url.pathname === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
      } else {
        res.setHeader('set-cookie', ['a=1', 'b=2']);
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${url.pathname}`);
      }
    });
    hidden = await listen('127.0.0.2', (_req, res) => res.end('hidden'), app.port);
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.close();
    app.connections = 0;
    hidden.connections = 0;
    app.requests.length = 0;
  });
  afterAll(async () => {
    await close(app);
    await close(hidden);
  });

  const base = () => `http://127.0.0.1:${app.port}`;

  it('refuses loopback by default without opening a connection', async () => {
    const guarded = client(createUrlGuard());
    for (const url of [
      `${base()}/`,
      `http://2130706433:${app.port}/`,
      `http://0x7f.0.0.1:${app.port}/`,
      `http://localhost:${app.port}/`,
    ]) {
      await expect(guarded.fetch(url), url).rejects.toBeInstanceOf(UrlRefusedError);
    }
    expect(guarded.lastError).toBeInstanceOf(UrlRefusedError);
    expect(app.connections).toBe(0);
  });

  it('refuses a name that resolves to loopback, at connect time', async () => {
    const resolve: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const guarded = client(createUrlGuard({ resolve }));
    await expect(guarded.fetch(`http://app.test:${app.port}/`)).rejects.toMatchObject({
      reason: 'loopback',
      address: '127.0.0.1',
    });
    expect(app.connections).toBe(0);
  });

  it('behaves like fetch when the address is allowed', async () => {
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }));
    const res = await guarded.fetch(`${base()}/hello`, {
      method: 'POST',
      headers: { 'x-custom': 'yes' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(res.status).toBe(200);
    expect(res.url).toBe(`${base()}/hello`);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.text()).toBe('POST /hello');
    expect(app.requests[0]).toMatchObject({
      method: 'POST',
      body: '{"a":1}',
      headers: { 'x-custom': 'yes', 'content-length': '7' },
    });
    const gz = await guarded.fetch(`${base()}/gzip`);
    expect(await gz.text()).toBe('compressed hello');
  });

  it('fails a response body larger than maxResponseBytes', async () => {
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }), {
      maxResponseBytes: 10_000,
    });
    const res = await guarded.fetch(`${base()}/big`);
    await expect(res.text()).rejects.toThrow();
    const small = await guarded.fetch(`${base()}/hello`);
    expect(await small.text()).toBe('GET /hello');
  });

  it('streams a response body as it arrives', async () => {
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }));
    const res = await guarded.fetch(`${base()}/stream`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: first\n\n');
    await reader.cancel();
  });

  it('vets every redirect hop and refuses one that leads to a refused address', async () => {
    // 127.0.0.1 stands in for a public server; 127.0.0.2 and metadata stay refused.
    const guarded = client(createUrlGuard({ allowedAddresses: ['127.0.0.1'] }));
    const to = encodeURIComponent(`http://127.0.0.2:${app.port}/`);
    await expect(guarded.fetch(`${base()}/redirect?to=${to}`)).rejects.toMatchObject({
      reason: 'loopback',
      host: '127.0.0.2',
    });
    const meta = encodeURIComponent('http://169.254.169.254/latest/meta-data/');
    await expect(
      guarded.fetch(`${base()}/redirect?status=307&to=${meta}`, { method: 'POST', body: 'x' }),
    ).rejects.toMatchObject({ reason: 'metadata' });
    expect(hidden.connections).toBe(0);
    expect(app.requests).toHaveLength(2);
  });

  it('follows allowed redirects, dropping credentials when the origin changes', async () => {
    const resolve: Resolve = async () => [{ address: '127.0.0.1', family: 4 }];
    const guarded = client(createUrlGuard({ allowedAddresses: ['127.0.0.1'], resolve }));
    const sameOrigin = await guarded.fetch(`${base()}/redirect?to=/final`, {
      headers: { authorization: 'Bearer s3cret' },
    });
    expect(await sameOrigin.text()).toBe('GET /final');
    expect(sameOrigin.redirected).toBe(true);
    expect(app.requests[1]!.headers.authorization).toBe('Bearer s3cret');

    const other = encodeURIComponent(`http://other.test:${app.port}/elsewhere`);
    const crossOrigin = await guarded.fetch(`${base()}/redirect?status=307&to=${other}`, {
      method: 'POST',
      body: 'kept',
      headers: { authorization: 'Bearer s3cret', 'x-custom': 'kept' },
    });
    expect(await crossOrigin.text()).toBe('POST /elsewhere');
    expect(app.requests[3]).toMatchObject({ body: 'kept', headers: { 'x-custom': 'kept' } });
    expect(app.requests[3]!.headers.authorization).toBeUndefined();
  });

  it('returns redirects as they are for manual, refuses them for error', async () => {
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }));
    const manual = await guarded.fetch(`${base()}/redirect?to=/x`, { redirect: 'manual' });
    expect(manual.status).toBe(302);
    expect(manual.headers.get('location')).toBe('/x');
    const to = encodeURIComponent(`http://127.0.0.2:${app.port}/secret?token=x`);
    const refused = guarded.fetch(`${base()}/redirect?status=307&to=${to}`, { redirect: 'error' });
    await expect(refused).rejects.toBeInstanceOf(TypeError);
    await expect(refused).rejects.toBeInstanceOf(RedirectRefusedError);
    await expect(refused).rejects.toMatchObject({
      status: 307,
      location: `http://127.0.0.2:${app.port}`,
    });
    expect(hidden.connections).toBe(0);
  });

  it('applies an allowed origin to its own connections only', async () => {
    const guarded = client(createUrlGuard({ allowedOrigins: [base()] }));
    expect(await (await guarded.fetch(`${base()}/hello`)).text()).toBe('GET /hello');
    // A redirect from the allowed origin to another port of the same host is a new origin.
    const to = encodeURIComponent(`http://127.0.0.2:${app.port}/`);
    await expect(guarded.fetch(`${base()}/redirect?to=${to}`)).rejects.toMatchObject({
      reason: 'loopback',
      host: '127.0.0.2',
    });
    expect(hidden.connections).toBe(0);
  });

  it('accepts a Request as input, as the OpenAI SDK type allows', async () => {
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }));
    const res = await guarded.fetch(
      new Request(`${base()}/req`, { method: 'POST', body: 'payload', headers: { 'x-a': '1' } }),
    );
    expect(await res.text()).toBe('POST /req');
    expect(app.requests[0]).toMatchObject({ body: 'payload', headers: { 'x-a': '1' } });
  });

  it('vets each new connection, so a name that rebinds to a refused address is caught', async () => {
    const answers = ['127.0.0.1', '127.0.0.2'];
    let calls = 0;
    const resolve: Resolve = async () => [{ address: answers[calls++] ?? '127.0.0.2', family: 4 }];
    const guarded = client(createUrlGuard({ allowedAddresses: ['127.0.0.1'], resolve }), {
      keepAlive: false,
    });
    const url = `http://rebind.test:${app.port}/`;
    expect(await (await guarded.fetch(url)).text()).toBe('GET /');
    await expect(guarded.fetch(url)).rejects.toMatchObject({
      reason: 'loopback',
      address: '127.0.0.2',
    });
    expect(calls).toBe(2);
    expect(hidden.connections).toBe(0);
  });

  it('aborts every request when its own signal fires', async () => {
    const controller = new AbortController();
    const guarded = client(createUrlGuard({ allowPrivateNetworks: true }), {
      signal: controller.signal,
    });
    const res = await guarded.fetch(`${base()}/stream`);
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
    await expect(guarded.fetch(`${base()}/`)).rejects.toMatchObject({ name: 'AbortError' });
  });
});

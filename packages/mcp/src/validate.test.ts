import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createUrlGuard, type Resolve } from '@agent-backend/url-guard';
import type { McpPolicy, McpServerConfig } from './connect.js';
import { serveFixture, type FixtureHttpServer } from './testing/fixture-server.js';
import { validateMcpServer } from './validate.js';
import { dev, failure } from './testing/validate-helpers.js';

const API_KEY = 'sk-live-9f8e7d6c5b4a';

const http = (base_url: string, extra: Partial<McpServerConfig> = {}): McpServerConfig => ({
  name: 'test',
  base_url,
  transport_type: 'streamable_http',
  ...extra,
});

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

describe('validateMcpServer against real MCP servers', () => {
  const servers: FixtureHttpServer[] = [];
  const serve = async (options: Parameters<typeof serveFixture>[0]) => {
    const server = await serveFixture(options);
    servers.push(server);
    return server;
  };
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  it('lists every tool and prompt over streamable HTTP, following pagination', async () => {
    const server = await serve({ transport: 'streamable_http', tools: 7, prompts: 5, pageSize: 2 });
    const result = await validateMcpServer(http(server.url), dev());
    expect(result).toMatchObject({
      success: true,
      status: 'connected',
      tool_count: 7,
      prompt_count: 5,
    });
    expect(result.tools.map((t) => t.name)).toEqual([1, 2, 3, 4, 5, 6, 7].map((i) => `tool-${i}`));
    expect(result.tools[0]).toEqual({ name: 'tool-1', description: 'Fixture tool 1' });
    expect(result.prompts[0]).toEqual({
      name: 'prompt-1',
      description: 'Fixture prompt 1',
      arguments: [{ name: 'topic', description: 'What about', required: true }],
    });
    const lists = server.requests.filter((r) => r.method === 'POST').length;
    expect(lists).toBeGreaterThanOrEqual(2 + 4 + 3); // initialize + initialized, 4 + 3 pages
  });

  it('lists over SSE', async () => {
    const server = await serve({ transport: 'sse', tools: 3, prompts: 1, pageSize: 2 });
    const result = await validateMcpServer(http(server.url, { transport_type: 'sse' }), dev());
    expect(result).toMatchObject({ tool_count: 3, prompt_count: 1 });
  });

  it('answers an empty prompt list for a server without prompts', async () => {
    const server = await serve({ transport: 'streamable_http', prompts: false });
    const result = await validateMcpServer(http(server.url), dev());
    expect(result).toMatchObject({ tool_count: 3, prompts: [], prompt_count: 0 });
  });

  it('sends api_key as a bearer token and the custom headers, on every request', async () => {
    const server = await serve({ transport: 'streamable_http', bearer: API_KEY });
    await validateMcpServer(
      http(server.url, { api_key: API_KEY, headers: { 'X-Tenant': 'acme' } }),
      dev(),
    );
    expect(server.requests.length).toBeGreaterThan(1);
    for (const request of server.requests) {
      expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(request.headers['x-tenant']).toBe('acme');
    }
  });

  it('reports rejected credentials without repeating them, even when the server echoes them', async () => {
    for (const transport of ['streamable_http', 'sse'] as const) {
      const server = await serve({ transport, bearer: 'the-right-key' });
      const error = await failure(
        validateMcpServer(
          http(`${server.url}?token=query-secret`, {
            transport_type: transport,
            api_key: API_KEY,
            headers: { 'X-Api-Key': 'header-secret-value' },
          }),
          dev(),
        ),
      );
      expect(error.kind).toBe('auth_rejected');
      expect(error.detail).toBe(
        `The MCP server at ${server.url} rejected the credentials (HTTP 401). Check api_key and headers.`,
      );
      for (const secret of [API_KEY, 'header-secret-value', 'query-secret'])
        expect(error.detail).not.toContain(secret);
    }
  });

  it('times out on a slow server, naming its URL', async () => {
    const server = await serve({ transport: 'streamable_http', slowMs: 5_000 });
    const error = await failure(validateMcpServer(http(server.url), dev(), { timeoutMs: 300 }));
    expect(error.kind).toBe('timeout');
    expect(error.detail).toBe(
      `Timed out after 300 ms waiting for the MCP server at ${server.url}.`,
    );
  });

  it('times out on an SSE endpoint that never sends its endpoint event', async () => {
    const silent = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': waiting\n\n');
    });
    const port = await listen(silent);
    const url = `http://127.0.0.1:${port}/sse`;
    const error = await failure(
      validateMcpServer(http(url, { transport_type: 'sse' }), dev(), { timeoutMs: 300 }),
    );
    expect(error.kind).toBe('timeout');
    expect(error.detail).toContain(url);
    silent.closeAllConnections();
    silent.close();
  });

  it('explains what is wrong with a server that is not an MCP server', async () => {
    const web = createHttpServer((req, res) => {
      if (req.url === '/html') res.writeHead(200, { 'content-type': 'text/html' }).end('<html/>');
      else if (req.url === '/json')
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      else res.writeHead(404).end('nope');
    });
    const port = await listen(web);
    const base = `http://127.0.0.1:${port}`;
    const notFound = await failure(validateMcpServer(http(`${base}/nothing`), dev()));
    expect(notFound).toMatchObject({ kind: 'not_mcp' });
    expect(notFound.detail).toContain('HTTP 404');
    expect(notFound.detail).toContain('transport_type');
    const html = await failure(validateMcpServer(http(`${base}/html`), dev()));
    expect(html).toMatchObject({ kind: 'not_mcp' });
    expect(html.detail).toContain('text/html');
    const json = await failure(validateMcpServer(http(`${base}/json`), dev()));
    expect(json.kind).toBe('not_mcp');
    const sse = await failure(
      validateMcpServer(http(`${base}/html`, { transport_type: 'sse' }), dev()),
    );
    expect(sse.kind).toBe('not_mcp');
    web.closeAllConnections();
    web.close();
  });

  it('reports an unreachable server', async () => {
    const closed = createHttpServer();
    const port = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    for (const transport of ['streamable_http', 'sse'] as const) {
      const error = await failure(
        validateMcpServer(
          http(`http://127.0.0.1:${port}/mcp`, { transport_type: transport }),
          dev(),
        ),
      );
      expect(error.kind, transport).toBe('unreachable');
      expect(error.detail).toContain('connection was refused');
    }
  });

  // The guard's `resolve` stands in for DNS: a real lookup of an `.invalid` name would query the
  // machine's DNS server, i.e. send traffic off the host.
  it('reports a host name that does not resolve as dns_failed', async () => {
    const notFound: Resolve = async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    const policy = { ...dev(), urlGuard: createUrlGuard({ resolve: notFound }) };
    for (const transport of ['streamable_http', 'sse'] as const) {
      const error = await failure(
        validateMcpServer(http('http://mcp.invalid/mcp', { transport_type: transport }), policy),
      );
      expect(error.kind, transport).toBe('dns_failed');
      expect(error.detail).toBe(
        'Could not reach the MCP server at http://mcp.invalid/mcp: the host name does not resolve.',
      );
    }
  });

  it('reports a TLS failure (self-signed certificate)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const tls = createHttpsServer(
      { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
      (_req, res) => res.end('hi'),
    );
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const port = (tls.address() as AddressInfo).port;
    const error = await failure(validateMcpServer(http(`https://127.0.0.1:${port}/mcp`), dev()));
    expect(error.kind).toBe('tls');
    expect(error.detail).toContain('self-signed');
    const plain = await failure(
      validateMcpServer(http(`https://127.0.0.1:${servers[0]!.port}/mcp`), dev()),
    );
    expect(plain.kind).toBe('tls');
    tls.close();
  });

  it('does not follow a redirect to another origin, and never reaches a refused target', async () => {
    const target = await serve({ transport: 'streamable_http', host: '127.0.0.2' });
    const redirector = createHttpServer((_req, res) =>
      res.writeHead(307, { location: target.url }).end(),
    );
    const port = await listen(redirector);
    // 127.0.0.1 stands in for a public address; 127.0.0.2 stays refused.
    const policy = { ...dev(), urlGuard: createUrlGuard({ allowedAddresses: ['127.0.0.1'] }) };
    const error = await failure(validateMcpServer(http(`http://127.0.0.1:${port}/mcp`), policy));
    expect(error.kind).toBe('redirect');
    expect(error.detail).toContain('redirected to http://127.0.0.2:');
    expect(target.connections).toBe(0);
    redirector.close();
  });

  it('refuses private addresses by default before connecting', async () => {
    const server = await serve({ transport: 'streamable_http' });
    const strict: McpPolicy = { ...dev(), urlGuard: createUrlGuard() };
    for (const url of [server.url, server.url.replace('127.0.0.1', 'localhost')]) {
      const error = await failure(validateMcpServer(http(url), strict));
      expect(error.kind).toBe('url_refused');
      expect(error.detail).toContain('loopback');
      expect(error.detail).toContain('MCP_ALLOW_PRIVATE_NETWORKS=true');
    }
    expect(server.connections).toBe(0);
  });

  it('rejects headers it must not forward, naming the header and not its value', async () => {
    const cases: Record<string, string>[] = [
      { Host: 'evil' },
      { 'Bad Header': 'x' },
      { 'X-Ok': 'line\r\nInjected: yes' },
    ];
    for (const headers of cases) {
      const error = await failure(
        validateMcpServer(http('http://127.0.0.1:9/mcp', { headers }), dev()),
      );
      expect(error.kind).toBe('invalid_config');
      expect(error.detail).not.toContain('evil');
      expect(error.detail).not.toContain('Injected');
    }
  });
});

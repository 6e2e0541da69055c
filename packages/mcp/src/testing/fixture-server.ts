/**
 * Real MCP servers built with the SDK, for tests and the benchmark: tools and prompts that page,
 * a server without prompts, a slow one, one that demands a bearer token. Not part of the build.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  type Prompt,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

export interface FixtureOptions {
  /** How many tools (`tool-1` ...). @default 3 */
  tools?: number;
  /** How many prompts; `false` declares no prompts capability at all. @default 2 */
  prompts?: number | false;
  /** Items per page of a listing. @default 1000 */
  pageSize?: number;
  /** Delay before answering `tools/list`. @default 0 */
  slowMs?: number;
  /** Extra tools appended after the numbered ones (e.g. a report of the environment). */
  extraTools?: Tool[];
  /** Answer every tools page with the same `nextCursor`, as a broken server would. */
  cursorLoop?: boolean;
}

export function fixtureTools(options: FixtureOptions = {}): Tool[] {
  const tools: Tool[] = Array.from({ length: options.tools ?? 3 }, (_, i) => ({
    name: `tool-${i + 1}`,
    description: `Fixture tool ${i + 1}`,
    inputSchema: { type: 'object', properties: {} },
  }));
  return [...tools, ...(options.extraTools ?? [])];
}

export function fixturePrompts(options: FixtureOptions = {}): Prompt[] {
  return Array.from({ length: options.prompts || 0 }, (_, i) => ({
    name: `prompt-${i + 1}`,
    description: `Fixture prompt ${i + 1}`,
    arguments: [{ name: 'topic', description: 'What about', required: i % 2 === 0 }],
  }));
}

/** A low-level SDK server whose listings page by `pageSize` with numeric cursors. */
export function createFixtureServer(options: FixtureOptions = {}): Server {
  const tools = fixtureTools(options);
  const prompts = fixturePrompts(options);
  const pageSize = options.pageSize ?? 1_000;
  const page = <T>(items: T[], cursor: string | undefined) => {
    const start = cursor ? Number(cursor) : 0;
    const next = start + pageSize < items.length ? String(start + pageSize) : undefined;
    return { items: items.slice(start, start + pageSize), nextCursor: next };
  };
  const server = new Server(
    { name: 'fixture', version: '1.0.0' },
    { capabilities: { tools: {}, ...(options.prompts === false ? {} : { prompts: {} }) } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    if (options.slowMs) await new Promise((resolve) => setTimeout(resolve, options.slowMs));
    if (options.cursorLoop) return { tools: tools.slice(0, 1), nextCursor: 'again' };
    const { items, nextCursor } = page(tools, request.params?.cursor);
    return { tools: items, ...(nextCursor ? { nextCursor } : {}) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => ({
    content: [
      {
        type: 'text',
        text: `${request.params.name} ${JSON.stringify(request.params.arguments ?? {})}`,
      },
    ],
  }));
  if (options.prompts !== false) {
    server.setRequestHandler(ListPromptsRequestSchema, async (request) => {
      const { items, nextCursor } = page(prompts, request.params?.cursor);
      return { prompts: items, ...(nextCursor ? { nextCursor } : {}) };
    });
  }
  return server;
}

export interface FixtureHttpOptions extends FixtureOptions {
  transport: 'streamable_http' | 'sse';
  /** Answer 401 unless `Authorization: Bearer <token>`; the 401 body echoes what was sent. */
  bearer?: string;
  /** Listen address. @default '127.0.0.1' */
  host?: string;
  /** Listen port. @default 0 */
  port?: number;
}

export interface FixtureHttpServer {
  /** The MCP endpoint: `/mcp` (streamable HTTP) or `/sse` (SSE). */
  readonly url: string;
  readonly port: number;
  /** Headers of every request received, in order. */
  readonly requests: { method: string; path: string; headers: IncomingMessage['headers'] }[];
  /** TCP connections accepted. */
  connections: number;
  close(): Promise<void>;
}

/** Serves a fixture server over streamable HTTP (stateless) or SSE on a real port. */
export async function serveFixture(options: FixtureHttpOptions): Promise<FixtureHttpServer> {
  const sse = new Map<string, SSEServerTransport>();
  const requests: FixtureHttpServer['requests'] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ method: req.method ?? '', path, headers: req.headers });
    if (options.bearer !== undefined && req.headers.authorization !== `Bearer ${options.bearer}`) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
      res.end(`invalid credentials: ${req.headers.authorization ?? '(none)'}`);
      return;
    }
    if (options.transport === 'streamable_http' && path === '/mcp') {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = createFixtureServer(options);
      res.on('close', () => void transport.close().then(() => server.close()));
      await server.connect(transport);
      await transport.handleRequest(req, res);
      return;
    }
    if (options.transport === 'sse' && path === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sse.set(transport.sessionId, transport);
      res.on('close', () => sse.delete(transport.sessionId));
      await createFixtureServer(options).connect(transport);
      return;
    }
    if (options.transport === 'sse' && path === '/messages' && req.method === 'POST') {
      const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '';
      const transport = sse.get(id);
      if (!transport) return void res.writeHead(404).end('unknown session');
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  };
  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  const state = { connections: 0 };
  http.on('connection', () => state.connections++);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, host, resolve));
  const port = (http.address() as AddressInfo).port;
  const path = options.transport === 'sse' ? '/sse' : '/mcp';
  return Object.assign(state, {
    url: `http://${host}:${port}${path}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  });
}

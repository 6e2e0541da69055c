/**
 * A real MCP server built with the SDK, serving streamable HTTP with sessions on loopback, for
 * the tests of MCP tools: text, image, failing and throwing tools; it records every session it
 * opened and the session of every tool call. Not part of the build.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** A 1×1 PNG. */
export const PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

export const TOOL_SERVER_TOOLS: Tool[] = [
  {
    name: 'echo',
    description: 'Echoes its text',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
  {
    name: 'lookup',
    description: 'Looks something up',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    annotations: { readOnlyHint: true },
  },
  { name: 'picture', description: 'Draws a picture', inputSchema: { type: 'object' } },
  { name: 'refuse', description: 'Always fails', inputSchema: { type: 'object' } },
  { name: 'explode', description: 'Throws', inputSchema: { type: 'object' } },
  { name: 'slow', description: 'Answers after 5 s', inputSchema: { type: 'object' } },
];

export interface ToolServer {
  readonly url: string;
  /** Session ids in the order the server created them. */
  readonly sessions: string[];
  /** Every tool call: tool name, arguments and the session it came on. */
  readonly calls: { name: string; args: unknown; session: string | undefined }[];
  /** Sessions not yet ended (by the client's DELETE or {@link forgetSessions}). */
  openSessions(): number;
  /** Ends every session (as a restarted server would have forgotten them). */
  forgetSessions(): Promise<void>;
  close(): Promise<void>;
}

async function answer(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  switch (name) {
    case 'echo':
    case 'lookup':
      return { content: [{ type: 'text', text: `${name}: ${JSON.stringify(args)}` }] };
    case 'picture':
      return {
        content: [
          { type: 'text', text: 'Here is the picture.' },
          { type: 'image', data: PIXEL_PNG, mimeType: 'image/png' },
        ],
      };
    case 'refuse':
      return { content: [{ type: 'text', text: 'refused: quota exceeded' }], isError: true };
    case 'slow':
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      return { content: [{ type: 'text', text: 'late' }] };
    default:
      throw new Error(`the ${name} tool blew up`);
  }
}

/** Starts the server on 127.0.0.1 and a free port; the endpoint is `/mcp`. */
export async function startToolServer(): Promise<ToolServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const sessions: string[] = [];
  const calls: ToolServer['calls'] = [];

  const open = async () => {
    const server = new Server(
      { name: 'tool-server', version: '1.0.0' },
      { capabilities: { tools: {} } },
    );
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.push(id);
        transports.set(id, transport);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_SERVER_TOOLS }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const args = request.params.arguments ?? {};
      calls.push({ name: request.params.name, args, session: transport.sessionId });
      return answer(request.params.name, args);
    });
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp')
      return void res.writeHead(404).end();
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? transports.get(id) : undefined;
    if (typeof id === 'string' && !existing) return void res.writeHead(404).end('unknown session');
    await (existing ?? (await open())).handleRequest(req, res);
  };
  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const forgetSessions = async () => {
    const all = [...transports.values()];
    transports.clear();
    await Promise.all(all.map((transport) => transport.close()));
  };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions,
    calls,
    openSessions: () => transports.size,
    forgetSessions,
    close: async () => {
      await forgetSessions();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

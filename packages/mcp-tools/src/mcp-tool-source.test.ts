import { PIXEL_PNG } from './testing/tool-server.js';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  runRequest,
  type AgentTool,
  type RunInfo,
  type ToolContext,
} from '@agent-backend/agent-runtime';
import { createLogger } from '@agent-backend/logger';
import { McpToolEntry } from '@agent-backend/protocol';
import { createMcpTools, type McpTools } from './mcp-tool-source.js';
import { mcpPolicy } from './policy.js';
import { startToolServer, type ToolServer } from './testing/tool-server.js';

const API_KEY = 'sk-mcp-tools-unit-7f3e9a';

/** The MCP tool source against real SDK servers on loopback. */
describe('createMcpTools', () => {
  let server: ToolServer;
  let other: ToolServer;
  const logLines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    }),
  });
  const opened: McpTools[] = [];
  const make = (
    options: {
      allowPrivate?: boolean;
      callTimeoutMs?: number;
      idleTtlMs?: number;
      maxConnections?: number;
    } = {},
  ) => {
    const tools = createMcpTools({
      policy: mcpPolicy({
        MCP_ALLOW_PRIVATE_NETWORKS: options.allowPrivate ?? true,
        MCP_STDIO_ALLOWLIST: [],
      }),
      logger,
      ...(options.callTimeoutMs ? { callTimeoutMs: options.callTimeoutMs } : {}),
      ...(options.idleTtlMs ? { idleTtlMs: options.idleTtlMs } : {}),
      ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
    });
    opened.push(tools);
    return tools;
  };
  const entry = (name: string, url: string, extra: Partial<McpToolEntry> = {}) => ({
    type: 'mcp' as const,
    name,
    base_url: url,
    api_key: API_KEY,
    ...extra,
  });
  const run = (userId: string, tools: unknown[]): RunInfo => ({
    userId,
    sessionId: 'sess_1',
    runId: 'run_1',
    request: runRequest({
      userId,
      message: 'hi',
      model: {
        baseUrl: 'https://llm.example/v1',
        apiKey: 'k',
        name: 'm',
        temperature: 0.7,
        chosenBy: 'request',
      },
      capabilities: { mcpServers: tools.map((entry) => McpToolEntry.parse(entry)) },
    }),
    signal: new AbortController().signal,
  });
  const context = { signal: new AbortController().signal } as ToolContext;
  const byName = (tools: AgentTool[], name: string) => {
    const tool = tools.find((t) => t.name === name);
    if (!tool) throw new Error(`no ${name} in ${tools.map((t) => t.name).join(', ')}`);
    return tool;
  };

  beforeAll(async () => {
    [server, other] = await Promise.all([startToolServer(), startToolServer()]);
  });
  afterAll(async () => {
    await Promise.all(opened.map((tools) => tools.close()));
    await Promise.all([server?.close(), other?.close()]);
  });

  it('offers every tool under mcp_<server>__<tool> with its schema and write flag', async () => {
    const tools = await make().source(run('alice', [entry('Files Server', server.url)]));
    expect(tools.map((t) => t.name)).toEqual([
      'mcp_Files_Server__echo',
      'mcp_Files_Server__lookup',
      'mcp_Files_Server__picture',
      'mcp_Files_Server__refuse',
      'mcp_Files_Server__explode',
      'mcp_Files_Server__slow',
    ]);
    const echo = byName(tools, 'mcp_Files_Server__echo');
    expect(echo.parameters).toEqual({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(echo.description).toBe('Echoes its text (tool "echo" of MCP server "Files Server")');
    expect(echo.writes).toBe(true);
    expect(byName(tools, 'mcp_Files_Server__lookup').writes).toBe(false);
  });

  it('maps text, images, isError results and thrown errors to tool output', async () => {
    const tools = await make().source(run('alice', [entry('s', server.url)]));
    expect(await byName(tools, 'mcp_s__echo').execute({ text: 'hey' }, context)).toEqual({
      content: 'echo: {"text":"hey"}',
    });
    expect(await byName(tools, 'mcp_s__picture').execute({}, context)).toEqual({
      content: 'Here is the picture.\n\n[image: image/png, 70 bytes]',
      images: [{ data: PIXEL_PNG, mimeType: 'image/png' }],
    });
    expect(await byName(tools, 'mcp_s__refuse').execute({}, context)).toEqual({
      content: 'refused: quota exceeded',
      isError: true,
    });
    const exploded = await byName(tools, 'mcp_s__explode').execute({}, context);
    expect(exploded.isError).toBe(true);
    expect(exploded.content).toContain('the explode tool blew up');
  });

  it('gives a call that outlives the call deadline a timeout error', async () => {
    const tools = await make({ callTimeoutMs: 300 }).source(run('alice', [entry('s', server.url)]));
    const output = await byName(tools, 'mcp_s__slow').execute({}, context);
    expect(output).toMatchObject({ isError: true });
    expect(output.content).toMatch(/^The tool "slow" of MCP server "s" failed \(timeout\): /);
  });

  it('keeps two servers with the same tool names apart', async () => {
    const tools = await make().source(
      run('alice', [entry('a', server.url), entry('b', other.url), entry('a', other.url)]),
    );
    const echoes = tools.filter((t) => t.name.includes('echo')).map((t) => t.name);
    expect(echoes).toHaveLength(3);
    expect(new Set(echoes).size).toBe(3);
    expect(echoes[0]).toBe('mcp_a__echo');
    expect(echoes[1]).toBe('mcp_b__echo');
    expect(echoes[2]).toMatch(/^mcp_a__echo__[0-9a-f]{8}$/);
    const before = other.calls.length;
    await byName(tools, echoes[2]!).execute({ text: 'x' }, context);
    expect(other.calls.length).toBe(before + 1);
  });

  it('refuses a loopback server without private networks: a stand-in tool explains it', async () => {
    const sessions = server.sessions.length;
    const tools = await make({ allowPrivate: false }).source(
      run('alice', [entry('s', server.url)]),
    );
    expect(tools.map((t) => t.name)).toEqual(['mcp_s__unavailable']);
    const [standIn] = tools;
    expect(standIn!.writes).toBe(false);
    expect(standIn!.description).toContain('url_refused');
    expect(standIn!.description).toContain('loopback');
    expect(await standIn!.execute({}, context)).toMatchObject({ isError: true });
    expect(server.sessions.length).toBe(sessions);
    expect(logLines.join('')).toContain('mcp server unavailable for this run');
    expect(logLines.join('')).not.toContain(API_KEY);
  });

  it('turns an unreachable server into the stand-in and keeps the other servers', async () => {
    const mcp = make();
    const tools = await mcp.source(
      run('alice', [entry('gone', 'http://127.0.0.1:9/mcp'), entry('s', server.url)]),
    );
    expect(byName(tools, 'mcp_gone__unavailable').description).toContain('unreachable');
    expect(tools.filter((t) => t.name.startsWith('mcp_s__'))).toHaveLength(6);
    expect(mcp.pool.size).toBe(1);
  });

  it('reuses one session per user and server, and never shares it between users', async () => {
    const mcp = make();
    const first = server.sessions.length;
    const alice1 = await mcp.source(run('alice', [entry('s', server.url)]));
    await byName(alice1, 'mcp_s__echo').execute({ text: '1' }, context);
    const alice2 = await mcp.source(run('alice', [entry('renamed', server.url)]));
    await byName(alice2, 'mcp_renamed__echo').execute({ text: '2' }, context);
    expect(server.sessions.length).toBe(first + 1);
    const bob = await mcp.source(run('bob', [entry('s', server.url)]));
    await byName(bob, 'mcp_s__echo').execute({ text: '3' }, context);
    const otherKey = await mcp.source(run('alice', [entry('s', server.url, { api_key: 'sk-2' })]));
    await byName(otherKey, 'mcp_s__echo').execute({ text: '4' }, context);
    expect(server.sessions.length).toBe(first + 3);
    const sessionsOf = server.calls.slice(-4).map((call) => call.session);
    expect(sessionsOf[0]).toBe(sessionsOf[1]);
    expect(new Set(sessionsOf).size).toBe(3);
    expect(mcp.pool.size).toBe(3);
    await mcp.close();
    expect(mcp.pool.size).toBe(0);
  });

  it('reconnects after the idle TTL and after the server forgot the session', async () => {
    const mcp = make({ idleTtlMs: 100 });
    const first = server.sessions.length;
    await mcp.source(run('carol', [entry('s', server.url)]));
    await waitUntil(() => mcp.pool.size === 0);
    const tools = await mcp.source(run('carol', [entry('s', server.url)]));
    expect(server.sessions.length).toBe(first + 2);
    await server.forgetSessions();
    // The call on the forgotten session fails as a tool error; the next one reconnects.
    expect(await byName(tools, 'mcp_s__echo').execute({ text: 'a' }, context)).toMatchObject({
      isError: true,
    });
    expect(await byName(tools, 'mcp_s__echo').execute({ text: 'b' }, context)).toEqual({
      content: 'echo: {"text":"b"}',
    });
    expect(server.sessions.length).toBe(first + 3);
  });

  it('closes the least recently used idle connection beyond maxConnections', async () => {
    const mcp = make({ maxConnections: 1 });
    const open = other.openSessions();
    await mcp.source(run('dave', [entry('s', other.url)]));
    expect(other.openSessions()).toBe(open + 1);
    await mcp.source(run('erin', [entry('s', other.url)]));
    expect(mcp.pool.size).toBe(1);
    await waitUntil(() => other.openSessions() === open + 1);
    await mcp.close();
    await waitUntil(() => other.openSessions() === open);
  });

  it('adds nothing when the request has no mcp entries', async () => {
    expect(await make().source(run('alice', []))).toEqual([]);
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!condition()) throw new Error('condition not reached');
}

import { afterAll, describe, expect, it } from 'vitest';
import { createUrlGuard } from '@agent-backend/url-guard';
import { connectMcp, type McpPolicy } from './connect.js';
import { McpConnectError } from './errors.js';
import { StdioPolicy } from './stdio-policy.js';
import { serveFixture, type FixtureHttpServer } from './testing/fixture-server.js';
import { FIXTURE_STDIO_ENTRY, fixtureStdioCommand } from './testing/stdio-command.js';

const policy: McpPolicy = {
  urlGuard: createUrlGuard({ allowPrivateNetworks: true }),
  stdio: new StdioPolicy([FIXTURE_STDIO_ENTRY]),
};

/** The connection API the agent runtime will use for MCP tools: connect, list, call, close. */
describe('connectMcp', () => {
  const servers: FixtureHttpServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  for (const transport of ['streamable_http', 'sse'] as const) {
    it(`lists and calls tools over ${transport}, then closes the session`, async () => {
      const server = await serveFixture({ transport, tools: 4, pageSize: 3 });
      servers.push(server);
      const connection = await connectMcp(
        { name: 'f', base_url: server.url, transport_type: transport },
        policy,
      );
      try {
        expect(connection.serverInfo).toEqual({ name: 'fixture', version: '1.0.0' });
        expect((await connection.listTools()).map((t) => t.name)).toEqual([
          'tool-1',
          'tool-2',
          'tool-3',
          'tool-4',
        ]);
        const result = await connection.callTool('tool-2', { q: 'x' });
        expect(result.content).toEqual([{ type: 'text', text: 'tool-2 {"q":"x"}' }]);
      } finally {
        await connection.close();
      }
      await connection.close(); // idempotent
      await expect(connection.listTools()).rejects.toBeInstanceOf(McpConnectError);
    });
  }

  it('calls tools over stdio', async () => {
    const connection = await connectMcp(
      { name: 'f', base_url: fixtureStdioCommand(), transport_type: 'stdio' },
      policy,
    );
    try {
      const result = await connection.callTool('tool-1');
      expect(result.content).toEqual([{ type: 'text', text: 'tool-1 {}' }]);
    } finally {
      await connection.close();
    }
  });

  it('refuses a listing whose cursor never ends', async () => {
    const server = await serveFixture({ transport: 'streamable_http', cursorLoop: true });
    servers.push(server);
    const connection = await connectMcp(
      { name: 'f', base_url: server.url, transport_type: 'streamable_http' },
      policy,
    );
    try {
      await expect(connection.listTools()).rejects.toMatchObject({
        kind: 'handshake',
        detail: 'The server repeated a tools page cursor.',
      });
    } finally {
      await connection.close();
    }
  });

  it('gives up when the caller aborts', async () => {
    const server = await serveFixture({ transport: 'streamable_http', slowMs: 5_000 });
    servers.push(server);
    const connection = await connectMcp(
      { name: 'f', base_url: server.url, transport_type: 'streamable_http' },
      policy,
    );
    try {
      const controller = new AbortController();
      const listing = connection.listTools({ signal: controller.signal });
      controller.abort();
      await expect(listing).rejects.toMatchObject({ kind: 'aborted' });
      await expect(connection.listTools({ timeoutMs: 200 })).rejects.toMatchObject({
        kind: 'timeout',
      });
    } finally {
      await connection.close();
    }
  });
});

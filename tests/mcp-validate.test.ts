import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importKeys, signAccessToken } from '@agent-backend/auth';
import { McpValidateResponse } from '@agent-backend/protocol';
import {
  createTestSchema,
  REPO_ROOT,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import {
  serveFixture,
  type FixtureHttpOptions,
  type FixtureHttpServer,
} from '../packages/mcp/src/testing/fixture-server.js';
import {
  startEverything,
  type EverythingServer,
} from '../packages/mcp/src/testing/server-everything.js';
import {
  FIXTURE_STDIO_ENTRY,
  fixtureStdioCommand,
} from '../packages/mcp/src/testing/stdio-command.js';
import { json, keyFiles, post, requireBuild } from './helpers.js';

const API = 'apps/api/dist/main.js';
const API_KEY = 'sk-mcp-test-0123456789abcdef';
const HEADER_SECRET = 'hdr-secret-fedcba9876543210';

/**
 * `POST /api/tools/mcp/validate` on the built api role, against real MCP servers on loopback:
 * fixtures built with the SDK in this process (streamable HTTP, SSE, stdio) and
 * `@modelcontextprotocol/server-everything` from npm (stdio, sse, streamableHttp).
 * Private networks are allowed here (they are where the test servers live); the refusals have
 * their own file, `mcp-ssrf.test.ts`.
 */
describe('MCP validation against real servers', () => {
  const keys = keyFiles();
  let schema: TestSchema;
  let api: ServiceProcess;
  /** Same configuration with a 1 s deadline, for the timeout. */
  let quick: ServiceProcess;
  let token: string;
  const fixtures: FixtureHttpServer[] = [];
  const everything: EverythingServer[] = [];

  const fixture = async (options: FixtureHttpOptions) => {
    const server = await serveFixture(options);
    fixtures.push(server);
    return server;
  };
  const validate = (body: unknown, service = api, auth = `Bearer ${token}`) =>
    post(`${service.url}/api/tools/mcp/validate`, body, auth ? { authorization: auth } : {});

  beforeAll(async () => {
    requireBuild(API);
    schema = await createTestSchema('mcp');
    const env = {
      REDIS_URL: testRedisUrl(),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: uniquePrefix('mcp'),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      PATH: `${REPO_ROOT}node_modules/.bin:${process.env.PATH ?? ''}`,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      MCP_STDIO_ALLOWLIST: `mcp-server-everything stdio,${FIXTURE_STDIO_ENTRY}`,
    };
    [api, quick] = await Promise.all([
      startServiceProcess({ entry: API, env }),
      startServiceProcess({ entry: API, env: { ...env, MCP_VALIDATE_TIMEOUT_MS: '1000' } }),
    ]);
    const signing = await importKeys({ publicKey: keys.publicKey, privateKey: keys.privateKey });
    token = (await signAccessToken(signing, 'alice')).accessToken;
  });
  afterAll(async () => {
    await Promise.all([api?.stop('SIGKILL'), quick?.stop('SIGKILL')]);
    await Promise.all([...fixtures, ...everything].map((s) => s.close()));
    await schema?.drop();
  });

  it('requires an access token and a valid body', async () => {
    const body = { name: 'x', base_url: 'http://127.0.0.1:1/mcp' };
    expect((await validate(body, api, '')).status).toBe(401);
    expect((await validate(body, api, 'Bearer not-a-jwt')).status).toBe(401);
    const invalid = await json(
      await validate({ base_url: 'ftp://x', transport_type: 'carrier-pigeon' }),
    );
    expect(invalid.status).toBe(400);
    const paths = (invalid.body as { error: { details: { path: string }[] } }).error.details.map(
      (d) => d.path,
    );
    expect(paths).toEqual(expect.arrayContaining(['name', 'transport_type']));
    const badUrl = await json(await validate({ name: 'x', base_url: 'not a url' }));
    expect(badUrl).toMatchObject({
      status: 400,
      body: { error: { details: [{ path: 'base_url' }] } },
    });
  });

  it('lists every tool and prompt of a streamable HTTP server, across pages', async () => {
    const server = await fixture({
      transport: 'streamable_http',
      tools: 9,
      prompts: 4,
      pageSize: 2,
    });
    const { status, body } = await json(await validate({ name: 'fixture', base_url: server.url }));
    expect(status).toBe(200);
    const parsed = McpValidateResponse.parse(body);
    expect(parsed).toEqual({
      success: true,
      status: 'connected',
      tools: Array.from({ length: 9 }, (_, i) => ({
        name: `tool-${i + 1}`,
        description: `Fixture tool ${i + 1}`,
      })),
      tool_count: 9,
      prompts: Array.from({ length: 4 }, (_, i) => ({
        name: `prompt-${i + 1}`,
        description: `Fixture prompt ${i + 1}`,
        arguments: [{ name: 'topic', description: 'What about', required: i % 2 === 0 }],
      })),
      prompt_count: 4,
    });
  });

  it('lists over SSE, and answers an empty prompt list for a server without prompts', async () => {
    const sse = await fixture({ transport: 'sse', tools: 5, pageSize: 2, prompts: false });
    const { status, body } = await json(
      await validate({ name: 'fixture-sse', base_url: sse.url, transport_type: 'sse' }),
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({ tool_count: 5, prompts: [], prompt_count: 0 });
  });

  it('runs an allowlisted stdio server with a minimal environment', async () => {
    const { status, body } = await json(
      await validate({
        name: 'fixture-stdio',
        transport_type: 'stdio',
        base_url: fixtureStdioCommand('--tools', '4', '--page-size', '3', '--env-report'),
      }),
    );
    expect(status).toBe(200);
    const result = McpValidateResponse.parse(body);
    expect(result.tool_count).toBe(5);
    const report = JSON.parse(result.tools.find((t) => t.name === 'env-report')!.description) as {
      env: string[];
    };
    // The service's own environment holds DATABASE_URL, REDIS_URL, JWT key paths: none of it.
    expect(report.env.sort()).toEqual(['HOME', 'PATH']);
  });

  describe('@modelcontextprotocol/server-everything', () => {
    const expectEverything = (status: number, body: unknown) => {
      expect(status).toBe(200);
      const result = McpValidateResponse.parse(body);
      expect(result.tool_count).toBe(result.tools.length);
      expect(result.prompt_count).toBe(result.prompts.length);
      expect(result.tools.map((t) => t.name)).toContain('echo');
      expect(result.prompt_count).toBeGreaterThan(0);
      return result;
    };

    it('over stdio, through the allowlist', async () => {
      const { status, body } = await json(
        await validate({
          name: 'everything',
          transport_type: 'stdio',
          base_url: 'mcp-server-everything stdio',
        }),
      );
      expectEverything(status, body);
    });

    it('over sse and streamable HTTP, with the same tools as over stdio', async () => {
      const stdio = await json(
        await validate({
          name: 'e',
          transport_type: 'stdio',
          base_url: 'mcp-server-everything stdio',
        }),
      );
      const viaStdio = expectEverything(stdio.status, stdio.body);
      const [sse, streamable] = await Promise.all([
        startEverything('sse'),
        startEverything('streamableHttp'),
      ]);
      everything.push(sse, streamable);
      const viaSse = await json(
        await validate({ name: 'e', transport_type: 'sse', base_url: sse.url }),
      );
      const viaHttp = await json(await validate({ name: 'e', base_url: streamable.url }));
      for (const { status, body } of [viaSse, viaHttp]) {
        const result = expectEverything(status, body);
        expect(result.tools.map((t) => t.name).sort()).toEqual(
          viaStdio.tools.map((t) => t.name).sort(),
        );
      }
    });
  });

  it('answers 408 { detail } naming the URL when the server is too slow', async () => {
    const slow = await fixture({ transport: 'streamable_http', slowMs: 10_000 });
    const { status, body } = await json(
      await validate({ name: 'slow', base_url: slow.url }, quick),
    );
    expect(status).toBe(408);
    expect(body).toEqual({
      detail: `Timed out after 1000 ms waiting for the MCP server at ${slow.url}.`,
    });
  });

  it('sends api_key as a bearer token and the custom headers', async () => {
    const secured = await fixture({ transport: 'streamable_http', bearer: API_KEY });
    const res = await validate({
      name: 'secured',
      base_url: secured.url,
      api_key: API_KEY,
      headers: { 'X-Tenant': HEADER_SECRET },
    });
    expect(res.status).toBe(200);
    expect(secured.requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`)).toBe(
      true,
    );
    expect(secured.requests.every((r) => r.headers['x-tenant'] === HEADER_SECRET)).toBe(true);
  });

  it('answers 424 when the server rejects the credentials, without repeating them', async () => {
    const secured = await fixture({ transport: 'streamable_http', bearer: 'the-right-one' });
    const res = await validate({
      name: 'secured',
      base_url: secured.url,
      api_key: API_KEY,
      headers: { 'X-Tenant': HEADER_SECRET },
    });
    expect(res.status).toBe(424);
    expect(res.headers.get('x-mcp-error')).toBe('auth_rejected');
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({
      detail: `The MCP server at ${secured.url} rejected the credentials (HTTP 401). Check api_key and headers.`,
    });
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(HEADER_SECRET);
  });

  it('answers 502 { detail } for an unreachable server and for one that is not MCP', async () => {
    const web = await fixture({ transport: 'streamable_http' });
    const notMcp = await json(
      await validate({ name: 'web', base_url: web.url.replace('/mcp', '/index.html') }),
    );
    expect(notMcp.status).toBe(502);
    expect((notMcp.body as { detail: string }).detail).toContain(
      'did not answer as an MCP server (HTTP 404)',
    );
    const gone = await fixture({ transport: 'streamable_http' });
    await gone.close();
    const unreachable = await json(await validate({ name: 'gone', base_url: gone.url }));
    expect(unreachable).toEqual({
      status: 502,
      body: {
        detail: `Could not reach the MCP server at ${gone.url}: the connection was refused (nothing listens on that port?).`,
      },
    });
  });

  it('never writes the api key or header values to its logs', async () => {
    // Runs last: every request above that carried secrets has been logged by now.
    const logs = [...api.stdout, ...api.stderr, ...quick.stdout, ...quick.stderr].join('\n');
    expect(logs).toContain('mcp validation failed');
    expect(logs).not.toContain(API_KEY);
    expect(logs).not.toContain(HEADER_SECRET);
  });
});

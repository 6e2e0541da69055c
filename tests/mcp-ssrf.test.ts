import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importKeys, signAccessToken } from '@agent-backend/auth';
import {
  createTestSchema,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import {
  serveFixture,
  type FixtureHttpServer,
} from '../packages/mcp/src/testing/fixture-server.js';
import {
  FIXTURE_STDIO_ENTRY,
  fixtureStdioCommand,
} from '../packages/mcp/src/testing/stdio-command.js';
import { json, keyFiles, post, requireBuild } from './helpers.js';

const API = 'apps/api/dist/main.js';

/**
 * The validation endpoint is not an attack tool: on the default configuration (private networks
 * refused) the built api role refuses every spelling of a loopback, private or metadata address
 * before connecting, and runs no stdio command that is not on its allowlist. Real MCP servers
 * listen on loopback the whole time and count the connections they get: zero.
 *
 * Redirects to private addresses and DNS rebinding need a server the policy allows that is not
 * private, which a test machine does not have; they are covered against real servers in
 * `packages/url-guard/src/guarded-fetch.test.ts` and `packages/mcp/src/validate.test.ts`, with
 * one loopback address standing in for a public one.
 */
describe('MCP validation refuses private addresses and unlisted commands', () => {
  const keys = keyFiles();
  const dir = mkdtempSync(join(tmpdir(), 'mcp-ssrf-'));
  let schema: TestSchema;
  let api: ServiceProcess;
  let token: string;
  let streamable: FixtureHttpServer;
  let sse: FixtureHttpServer;

  const validate = (body: Record<string, unknown>) =>
    post(
      `${api.url}/api/tools/mcp/validate`,
      { name: 'target', ...body },
      { authorization: `Bearer ${token}` },
    );

  beforeAll(async () => {
    requireBuild(API);
    schema = await createTestSchema('mcpssrf');
    [streamable, sse] = await Promise.all([
      serveFixture({ transport: 'streamable_http' }),
      serveFixture({ transport: 'sse' }),
    ]);
    api = await startServiceProcess({
      entry: API,
      env: {
        REDIS_URL: testRedisUrl(),
        DATABASE_URL: testDatabaseUrl(),
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: uniquePrefix('mcpssrf'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        MCP_STDIO_ALLOWLIST: FIXTURE_STDIO_ENTRY,
      },
    });
    const signing = await importKeys({ publicKey: keys.publicKey, privateKey: keys.privateKey });
    token = (await signAccessToken(signing, 'mallory')).accessToken;
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await Promise.all([streamable?.close(), sse?.close()]);
    await schema?.drop();
  });

  it('refuses loopback in every encoding, and names resolving to it, with 403 { detail }', async () => {
    const spellings = (port: number, path: string) => [
      `http://127.0.0.1:${port}${path}`,
      `http://2130706433:${port}${path}`,
      `http://0x7f.0.0.1:${port}${path}`,
      `http://0177.0.0.1:${port}${path}`,
      `http://127.1:${port}${path}`,
      `http://[::ffff:127.0.0.1]:${port}${path}`,
      `http://[::1]:${port}${path}`,
      `http://localhost:${port}${path}`,
      `http://mcp.localhost:${port}${path}`,
    ];
    for (const [server, transport, path] of [
      [streamable, 'streamable_http', '/mcp'],
      [sse, 'sse', '/sse'],
    ] as const) {
      for (const base_url of spellings(server.port, path)) {
        const res = await validate({ base_url, transport_type: transport });
        expect(res.status, base_url).toBe(403);
        expect(res.headers.get('x-mcp-error')).toBe('url_refused');
        const body = (await res.json()) as { detail: string };
        expect(Object.keys(body)).toEqual(['detail']);
        expect(body.detail, base_url).toMatch(
          /^Refused to connect to http:\/\/.+: .+ loopback address\./,
        );
      }
    }
    expect(streamable.connections).toBe(0);
    expect(sse.connections).toBe(0);
  });

  it('refuses private, link-local and cloud metadata addresses', async () => {
    for (const [base_url, what] of [
      ['http://10.0.0.1/mcp', 'private-network'],
      ['http://192.168.1.10:8080/mcp', 'private-network'],
      ['http://172.20.0.5/mcp', 'private-network'],
      ['http://[fd00::1]/mcp', 'private-network'],
      ['http://169.254.10.10/mcp', 'link-local'],
      ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
      ['http://[::ffff:a9fe:a9fe]/', 'cloud metadata'],
      ['http://metadata.google.internal/computeMetadata/v1/', 'cloud metadata'],
      ['http://0.0.0.0:8000/mcp', 'unspecified'],
    ]) {
      const { status, body } = await json(await validate({ base_url: base_url! }));
      expect(status, base_url).toBe(403);
      expect((body as { detail: string }).detail, base_url).toContain(what);
    }
  });

  it('runs no stdio command that is not allowlisted', async () => {
    const marker = join(dir, 'marker');
    for (const [base_url, status, kind] of [
      [`node -e "require('fs').writeFileSync('${marker}', 'x')"`, 403, 'command_refused'],
      [`sh -c "touch ${marker}"`, 403, 'command_refused'],
      [`touch ${marker}`, 403, 'command_refused'],
      [`/usr/bin/env touch ${marker}`, 403, 'command_refused'],
      [`${FIXTURE_STDIO_ENTRY}; touch ${marker}`, 400, 'invalid_config'],
      [`${FIXTURE_STDIO_ENTRY} $(touch ${marker})`, 400, 'invalid_config'],
    ] as const) {
      const res = await validate({ base_url, transport_type: 'stdio' });
      expect(res.status, base_url).toBe(status);
      expect(res.headers.get('x-mcp-error')).toBe(kind);
      expect(Object.keys((await res.json()) as object)).toEqual(['detail']);
    }
    // Had a process been started, validation would have waited for its handshake, and the
    // process (exiting after `touch`) would have left both the marker and a 502 behind.
    expect(existsSync(marker)).toBe(false);

    // The allowlisted command writes the same marker, so the check above is able to fail.
    const allowed = await validate({
      base_url: fixtureStdioCommand('--marker', marker),
      transport_type: 'stdio',
    });
    expect(allowed.status).toBe(200);
    expect(existsSync(marker)).toBe(true);
  });
});

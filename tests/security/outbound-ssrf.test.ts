import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  closedLoopbackPort,
  createTestSchema,
  startCountingServer,
  startScriptedModel,
  startSelfSignedServer,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  textReply,
  uniquePrefix,
  type LoopbackServer,
  type ScriptedModel,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import {
  serveFixture,
  type FixtureHttpServer,
} from '../../packages/mcp/src/testing/fixture-server.js';
import { accessToken, API_ENTRY, invoke } from '../agent-helpers.js';
import { keyFiles, post, requireBuild } from '../helpers.js';

const API_KEY = 'sk-outbound-secret-31c7a9';

/** The built api role on a schema and key prefix of its own, with `env` on top. */
function startApi(
  keys: ReturnType<typeof keyFiles>,
  schema: TestSchema,
  prefix: string,
  env: Record<string, string>,
): Promise<ServiceProcess> {
  return startServiceProcess({
    entry: API_ENTRY,
    env: {
      REDIS_URL: testRedisUrl(),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: uniquePrefix(prefix),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      ...env,
    },
  });
}

/**
 * Outbound requests built from user input, against the built api role with the default policy
 * (MCP_ALLOW_PRIVATE_NETWORKS unset) and a few loopback origins opened for model servers with
 * LLM_ALLOWED_ORIGINS. Every server is on 127.0.0.1: the ones a request must never reach count
 * their TCP connections, so "never contacted" is a number, not an absence of errors.
 *
 * A host name that does not resolve is not tested here: the service resolves through the OS,
 * and an unresolvable name would send a query to the machine's DNS server. It is tested at the
 * package level with the guard's injectable resolver (agent-runtime `model-url-guard.test.ts`,
 * mcp `validate.test.ts`).
 */
describe('outbound requests from user input (SSRF)', () => {
  const keys = keyFiles();
  let schema: TestSchema;
  let api: ServiceProcess;
  let token: string;
  let model: ScriptedModel;
  /** Allowed as a model origin; answers every request with a 302 to `target`. */
  let redirector: LoopbackServer;
  /** Allowed nowhere. */
  let target: LoopbackServer;
  let tls: LoopbackServer;
  let closedPort: number;
  /** A real MCP server whose origin is in LLM_ALLOWED_ORIGINS, which must not open it to MCP. */
  let mcp: FixtureHttpServer;

  beforeAll(async () => {
    requireBuild(API_ENTRY);
    [schema, model, target, tls, closedPort, mcp] = await Promise.all([
      createTestSchema('outbound'),
      startScriptedModel(),
      startCountingServer(),
      startSelfSignedServer(),
      closedLoopbackPort(),
      serveFixture({ transport: 'streamable_http' }),
    ]);
    redirector = await startCountingServer((req, res) =>
      res.writeHead(302, { location: `${target.origin}${req.url}` }).end(),
    );
    api = await startApi(keys, schema, 'outbound', {
      LLM_ALLOWED_ORIGINS: [
        new URL(model.baseUrl).origin,
        redirector.origin,
        tls.origin,
        `http://127.0.0.1:${closedPort}`,
        new URL(mcp.url).origin,
      ].join(','),
    });
    token = await accessToken(keys.privateKey, 'outbound-user');
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await Promise.all([
      model?.close(),
      redirector?.close(),
      target?.close(),
      tls?.close(),
      mcp?.close(),
    ]);
    await schema?.drop();
  });

  let counter = 0;
  /** Invokes a run on `baseUrl` and returns its last event. */
  async function run(baseUrl: string, extra: Record<string, unknown> = {}) {
    const modelName = `out-${++counter}`;
    model.script(modelName, [textReply('Local model says hi.')]);
    const stream = await invoke(api.url, token, {
      message: 'hello',
      llm_config: { baseUrl, apiKey: API_KEY, modelName },
      ...extra,
    });
    expect(stream.response.status).toBe(200);
    const events = await stream.ended;
    expect(JSON.stringify(events)).not.toContain(API_KEY);
    return { events, last: events.at(-1)!.data, modelName };
  }

  it('reaches a loopback model server whose origin is in LLM_ALLOWED_ORIGINS', async () => {
    const { events, last } = await run(model.baseUrl);
    expect(last).toMatchObject({ type: 'done' });
    const text = events.filter((e) => e.data.type === 'message_chunk').map((e) => e.data.content);
    expect(text.join('')).toBe('Local model says hi.');
  });

  it('refuses a loopback model server that is not listed, naming the setting', async () => {
    const { last } = await run(`${target.origin}/v1`);
    expect(last).toEqual({
      type: 'error',
      code: 'llm_base_url_refused',
      message: `the model base URL is not allowed on this server: 127.0.0.1 is a loopback address; the operator can allow this model server with LLM_ALLOWED_ORIGINS=${target.origin}`,
    });
    expect(target.connections).toBe(0);
  });

  it('refuses a redirect from an allowed model origin to a port that is not allowed, never contacting it', async () => {
    const before = redirector.connections;
    const { last } = await run(`${redirector.origin}/v1`);
    expect(last).toEqual({
      type: 'error',
      code: 'llm_redirect_refused',
      message: `the model base URL answered with a redirect, which is not followed (HTTP 302 to ${target.origin}); use the final URL as baseUrl`,
    });
    expect(redirector.connections).toBeGreaterThan(before);
    expect(target.connections).toBe(0);
  });

  it('reports a closed port as llm_connect_failed and a self-signed certificate as llm_tls_failed', async () => {
    const closed = await run(`http://127.0.0.1:${closedPort}/v1`);
    expect(closed.last).toMatchObject({ type: 'error', code: 'llm_connect_failed' });
    expect(closed.last.message).toContain('the connection was refused');
    const handshake = await run(`${tls.origin}/v1`);
    expect(handshake.last).toMatchObject({ type: 'error', code: 'llm_tls_failed' });
    expect(handshake.last.message).toContain('the certificate is self-signed');
  });

  it('does not let LLM_ALLOWED_ORIGINS open a loopback MCP server', async () => {
    const res = await post(
      `${api.url}/api/tools/mcp/validate`,
      { name: 'local', base_url: mcp.url, transport_type: 'streamable_http' },
      { authorization: `Bearer ${token}` },
    );
    expect(res.status).toBe(403);
    expect(res.headers.get('x-mcp-error')).toBe('url_refused');
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toMatch(/^Refused to connect to http:\/\/127\.0\.0\.1:\d+\/mcp: /);
    expect(detail).toContain('MCP_ALLOW_PRIVATE_NETWORKS=true');

    // Nor in a run: the server is reported to the model as unavailable, its tools are missing.
    const { last, modelName } = await run(model.baseUrl, {
      tools: [{ type: 'mcp', name: 'local', base_url: mcp.url }],
    });
    expect(last).toMatchObject({ type: 'done' });
    const offered = model.requests(modelName)[0]!.body.tools ?? [];
    expect(offered.map((t) => t.function.description).join('\n')).toContain('(url_refused)');
    expect(mcp.connections).toBe(0);
  });
});

/**
 * MCP over HTTP with loopback allowed (MCP_ALLOW_PRIVATE_NETWORKS=true): an allowed MCP origin
 * that redirects to another loopback port hands nothing on. The redirect is reported (502
 * `redirect`) and the other port, although the address policy would allow it, never sees a
 * connection: redirects to another origin are not followed, so credentials stay with the origin
 * the user named.
 */
describe('MCP redirects over HTTP (SSRF)', () => {
  const keys = keyFiles();
  let schema: TestSchema;
  let api: ServiceProcess;
  let token: string;
  /** The MCP origin the user names; answers every request with a 302 to `target`. */
  let redirector: LoopbackServer;
  /** Another loopback port: must never be contacted. */
  let target: LoopbackServer;

  beforeAll(async () => {
    requireBuild(API_ENTRY);
    [schema, target] = await Promise.all([createTestSchema('outbound-mcp'), startCountingServer()]);
    redirector = await startCountingServer((req, res) =>
      res.writeHead(302, { location: `${target.origin}${req.url}` }).end(),
    );
    api = await startApi(keys, schema, 'outbound-mcp', { MCP_ALLOW_PRIVATE_NETWORKS: 'true' });
    token = await accessToken(keys.privateKey, 'outbound-mcp-user');
  });
  afterAll(async () => {
    await api?.stop('SIGKILL');
    await Promise.all([redirector?.close(), target?.close()]);
    await schema?.drop();
  });

  for (const transport of ['streamable_http', 'sse'] as const) {
    it(`reports a ${transport} MCP server redirecting to another loopback port, never contacting it`, async () => {
      const before = redirector.connections;
      const res = await post(
        `${api.url}/api/tools/mcp/validate`,
        {
          name: 'hop',
          base_url: `${redirector.origin}/mcp`,
          transport_type: transport,
          api_key: 'mcp-key-never-forwarded',
        },
        { authorization: `Bearer ${token}` },
      );
      expect(res.status).toBe(502);
      expect(res.headers.get('x-mcp-error')).toBe('redirect');
      const { detail } = (await res.json()) as { detail: string };
      expect(detail).toContain(`redirected to ${target.origin}`);
      expect(detail).not.toContain('mcp-key-never-forwarded');
      expect(redirector.connections).toBeGreaterThan(before);
      expect(target.connections).toBe(0);
    });
  }
});

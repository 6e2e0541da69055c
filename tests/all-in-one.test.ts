import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEntry, startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { badTokens, json, post, requireBuild, tempDir } from './helpers.js';
import { ofType, openSocket } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const SIMULATOR = 'packages/node-client/dist/simulate-node.js';

/** The embedded default: no Redis, no PostgreSQL, everything under DATA_DIR. */
describe('all-in-one on the embedded engine', () => {
  const dataDir = tempDir('all-in-one');
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  let service: ServiceProcess;
  const issued: string[] = [];

  const issue = async (userId: string) => {
    const result = await runEntry(TOKEN_ISSUE, [userId], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const pair = JSON.parse(lines[0]!) as { refreshToken: string; accessToken: string };
    expect(Object.keys(pair).sort()).toEqual(['accessToken', 'refreshToken']);
    issued.push(pair.refreshToken, pair.accessToken);
    return pair;
  };
  const whoami = (url: string, token?: string) =>
    fetch(`${url}/api/auth/whoami`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE, SIMULATOR);
    service = await startServiceProcess({ entry: MAIN, env });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
  });

  it('is alive and ready on PGlite', async () => {
    expect(await json(await fetch(`${service.url}/healthz`))).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect(await json(await fetch(`${service.url}/readyz`))).toEqual({
      status: 200,
      body: { status: 'ready', checks: { pglite: { ok: true } } },
    }); // One line for a person: where it answers and on what.
    const messages = service.stdout.map((line) => (JSON.parse(line) as { msg?: string }).msg);
    expect(messages).toContain(
      `all-in-one ready at ${service.url} (database: PGlite in ${dataDir}; queues and bus: in-process; playground: ${service.url}/)`,
    );
  });

  it('starts without a warning: no warn-level log line, no Node.js or npm warning', () => {
    // A first run should not greet a person with warnings about our own setup.
    const warnings = [...service.stdout, ...service.stderr].filter((line) =>
      /"level":"(warn|error|fatal)"|\bWARN\b|npm warn|Warning\b/i.test(line),
    );
    expect(warnings).toEqual([]);
    expect(service.stdout.length).toBeGreaterThan(0);
  });

  it('token:issue reaches the running service and its tokens work', async () => {
    const { accessToken, refreshToken } = await issue('alice');
    expect(await json(await whoami(service.url, accessToken))).toEqual({
      status: 200,
      body: { user_id: 'alice' },
    });

    const refreshed = await json(await post(`${service.url}/api/auth/refresh`, { refreshToken }));
    expect(refreshed.status).toBe(200);
    const body = refreshed.body as { accessToken: string; expiresIn: number };
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiresIn']);
    expect(body.expiresIn).toBe(3600);
    issued.push(body.accessToken);
    expect(await json(await whoami(service.url, body.accessToken))).toEqual({
      status: 200,
      body: { user_id: 'alice' },
    });
  });

  it('refresh answers 401 { error } for unknown tokens and 400 for a missing one', async () => {
    const unknown = await json(
      await post(`${service.url}/api/auth/refresh`, { refreshToken: 'rt_unknown' }),
    );
    expect(unknown).toEqual({
      status: 401,
      body: { error: 'refresh token is invalid or expired' },
    });
    const missing = await json(await post(`${service.url}/api/auth/refresh`, {}));
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({
      error: { code: 'invalid_request', details: [{ path: 'refreshToken' }] },
    });
  });

  it('refuses missing, expired, malformed, unsigned and HS256 access tokens with 401', async () => {
    const keys = {
      publicKey: readFileSync(join(dataDir, 'jwt-public.pem'), 'utf8'),
      privateKey: readFileSync(join(dataDir, 'jwt-private.pem'), 'utf8'),
    };
    const missing = await whoami(service.url);
    expect(missing.status).toBe(401);
    for (const [name, token] of Object.entries(await badTokens(keys))) {
      const res = await whoami(service.url, token);
      expect(res.status, name).toBe(401);
      expect(await res.json(), name).toMatchObject({
        error: { code: 'unauthorized', message: expect.any(String) },
      });
    }
  });

  it('serves WebSocket nodes on the same port and calls their tools in-process', async () => {
    const { accessToken } = await issue('dave');
    const node = await openSocket(
      `${service.url.replace('http', 'ws')}/ws/desktop?client_id=desktop_dave&token=${accessToken}`,
    );
    node.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { id?: string; method?: string };
      if (frame.method === 'tools/call') {
        node.send({
          jsonrpc: '2.0',
          id: frame.id,
          result: { content: [{ type: 'text', text: 'hi' }] },
        });
      }
    });
    node.send({
      type: 'register',
      node_id: 'desktop_dave',
      node_type: 'desktop',
      available_tools: ['greet'],
    });
    await node.next(ofType('registered'));
    const auth = { authorization: `Bearer ${accessToken}` };
    const listed = await json(
      await fetch(`${service.url}/node/devices?user_id=dave`, { headers: auth }),
    );
    expect(listed.body).toMatchObject({
      total: 1,
      nodes: [{ node_id: 'desktop_dave', available_tools: ['greet'] }],
    });
    const called = await json(
      await post(
        `${service.url}/node/tools/call`,
        { node_type: 'desktop', tool_name: 'greet' },
        auth,
      ),
    );
    expect(called).toEqual({ status: 200, body: { success: true, text: 'hi', images: [] } });
    await node.close();
  });

  it('runs the node simulator from a refresh token in the environment, which it renews itself', async () => {
    const { refreshToken, accessToken } = await issue('erin');
    const simulate = (token: string) => {
      const child = spawn(
        process.execPath,
        [
          SIMULATOR,
          '--kind',
          'desktop',
          '--user',
          'erin',
          '--url',
          service.url.replace('http', 'ws'),
        ],
        {
          env: { PATH: process.env.PATH ?? '', SIMULATE_NODE_REFRESH_TOKEN: token },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exit = new Promise<number | null>((resolve) =>
        child.once('exit', (code) => resolve(code)),
      );
      return { child, exit, stderr: () => stderr };
    };
    const sim = simulate(refreshToken);
    try {
      await expect.poll(sim.stderr, { timeout: 15_000 }).toMatch(/ registered /);
      expect(sim.stderr()).toMatch(/ token_refreshed expires_at=/);
      const listed = await json(
        await fetch(`${service.url}/node/devices?user_id=erin`, {
          headers: { authorization: `Bearer ${accessToken}` },
        }),
      );
      expect(listed.body).toMatchObject({
        total: 1,
        nodes: [{ node_id: 'desktop_erin', status: 'online' }],
      });
      // No token on its command line (ps) nor in its output.
      expect(sim.stderr()).not.toContain(refreshToken);
    } finally {
      sim.child.kill('SIGTERM');
    }
    expect(await sim.exit).toBe(0);

    const refused = simulate('rt_not_a_real_one');
    expect(await refused.exit).toBe(1);
    expect(refused.stderr()).toMatch(/ refresh_refused /);
  });

  it('never writes a token to its log', () => {
    const log = service.stdout.join('\n');
    expect(log).toContain('"msg":"request"');
    for (const secret of issued) expect(log).not.toContain(secret);
  });

  it('stops cleanly on SIGTERM; tokens issued offline survive a restart', async () => {
    const { refreshToken: before } = await issue('bob');
    expect(await service.stop('SIGTERM')).toBe(0);
    expect(service.stdout.some((l) => l.includes('"msg":"stopped"'))).toBe(true);

    // No service holds the data directory now: token:issue opens the PGlite files itself.
    const { refreshToken: offline } = await issue('carol');
    service = await startServiceProcess({ entry: MAIN, env });
    for (const [token, user] of [
      [before, 'bob'],
      [offline, 'carol'],
    ] as const) {
      const res = await json(
        await post(`${service.url}/api/auth/refresh`, { refreshToken: token }),
      );
      expect(res.status).toBe(200);
      const { accessToken } = res.body as { accessToken: string };
      expect(await json(await whoami(service.url, accessToken))).toEqual({
        status: 200,
        body: { user_id: user },
      });
    }
  });

  it('token:issue refuses a missing or malformed user id', async () => {
    for (const args of [[], ['has space'], ['x'.repeat(129)]]) {
      const result = await runEntry(TOKEN_ISSUE, args, env);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('usage: pnpm token:issue <user_id>');
    }
  });
});

/**
 * Tokens from the operator's identity provider on a real started service: a real OpenID provider
 * (`oidc-provider`) on loopback issues JWT access tokens (client credentials with a resource
 * indicator), the all-in-one is pointed at its discovery document, and the provider's tokens are
 * used on an HTTP route and on the WebSocket endpoints beside the service's own. Reserved user ids
 * (`chat:`, `task:`) are refused at issue and at verification.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jwt from 'jsonwebtoken';
import {
  providerSigningKey,
  runEntry,
  startOidcProvider,
  startServiceProcess,
  type OidcProvider,
  type ProviderSigningKey,
  type ServiceProcess,
} from '@agent-backend/testing';
import { RESERVED_USER_ID_PREFIXES } from '@agent-backend/auth';
import { RESERVED_SESSION_ID_PREFIXES } from '@agent-backend/agent-runtime';
import { WS_CLOSE } from '@agent-backend/protocol';
import { json, requireBuild, tempDir } from './helpers.js';
import { eventually, ofType, openSocket } from './ws-client.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const AUDIENCE = 'urn:agent-backend';
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access tokens of the identity provider on a started service', () => {
  const k1 = providerSigningKey('k1');
  const k2 = providerSigningKey('k2');
  const attacker = providerSigningKey('attacker');
  const env: Record<string, string> = { DATA_DIR: tempDir('idp'), LOG_LEVEL: 'info' };
  let provider: OidcProvider;
  let service: ServiceProcess;
  /** A loopback server that `jku` / `x5u` headers point at; it must never be asked. */
  let bait: Server;
  let baitRequests = 0;
  let baitUrl: string;

  const whoami = (token: string) =>
    fetch(`${service.url}/api/auth/whoami`, { headers: { authorization: `Bearer ${token}` } });
  const wsUrl = (path: string, query: Record<string, string>) =>
    `${service.url.replace('http', 'ws')}${path}?${new URLSearchParams(query).toString()}`;
  /** A token signed by `key` with the provider's claims unless overridden. */
  const forge = (
    key: ProviderSigningKey,
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ) => {
    const now = Math.floor(Date.now() / 1000);
    const payload = Object.fromEntries(
      Object.entries({
        sub: 'app-user',
        iss: provider.issuer,
        aud: AUDIENCE,
        iat: now,
        exp: now + 600,
        ...claims,
      }).filter(([, value]) => value !== undefined),
    );
    return jwt.sign(payload, key.privateKey, {
      algorithm: key.alg,
      header: { alg: key.alg, kid: key.kid, ...header },
    });
  };

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    provider = await startOidcProvider({
      keys: [k1],
      audience: AUDIENCE,
      clients: ['app-user', 'chat:lark:oc_1'],
    });
    bait = createServer((_request, response) => {
      baitRequests += 1;
      response.end(JSON.stringify({ keys: [attacker.jwk] }));
    });
    await new Promise<void>((resolve) => bait.listen(0, '127.0.0.1', resolve));
    baitUrl = `http://127.0.0.1:${(bait.address() as AddressInfo).port}/jwks`;
    Object.assign(env, {
      AUTH_JWKS_URL: provider.discoveryUrl,
      AUTH_ISSUER: provider.issuer,
      AUTH_AUDIENCE: AUDIENCE,
      AUTH_JWKS_REFETCH_SECONDS: '1',
      DEV_TOKENS: 'true',
    });
    service = await startServiceProcess({ entry: MAIN, env });
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await provider?.stop();
    await new Promise((resolve) => bait?.close(resolve));
  });

  it("accepts the provider's token on an HTTP route, beside the service's own", async () => {
    const token = await provider.accessToken('app-user');
    expect(await json(await whoami(token))).toEqual({
      status: 200,
      body: { user_id: 'app-user' },
    });
    const issued = await runEntry(TOKEN_ISSUE, ['own-user'], env);
    expect(issued.code).toBe(0);
    const own = JSON.parse(issued.stdout) as { accessToken: string };
    expect(await json(await whoami(own.accessToken))).toEqual({
      status: 200,
      body: { user_id: 'own-user' },
    });
  });

  it("accepts the provider's token on the WebSocket endpoints, for its own user only", async () => {
    const token = await provider.accessToken('app-user');
    const web = await openSocket(wsUrl('/ws/web', { user_id: 'app-user', token }));
    web.send({ type: 'ping' });
    await web.next(ofType('pong'));
    await web.close();
    const desktop = await openSocket(wsUrl('/ws/desktop', { client_id: 'desktop_app-user' }), {
      authorization: `Bearer ${token}`,
    });
    desktop.send({
      type: 'register',
      node_id: 'desktop_app-user',
      node_type: 'desktop',
      available_tools: ['greet'],
    });
    await desktop.next(ofType('registered'));
    await desktop.close();
    const other = await openSocket(wsUrl('/ws/web', { user_id: 'someone-else', token }));
    expect((await other.closed).code).toBe(WS_CLOSE.forbidden);
    const wrongAudience = forge(k1, { aud: 'urn:another-api' });
    const refused = await openSocket(
      wsUrl('/ws/web', { user_id: 'app-user', token: wrongAudience }),
    );
    expect(await refused.closed).toMatchObject({ code: WS_CLOSE.unauthorized });
  });

  it('refuses wrong issuer, audience, algorithm, unknown kid, expiry, and keys the token names', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: 'app-user', iss: provider.issuer, aud: AUDIENCE, exp: now + 600 };
    const hsInput = `${b64({ alg: 'HS256', typ: 'JWT', kid: 'k1' })}.${b64(claims)}`;
    const refused: Record<string, string> = {
      'wrong issuer': forge(k1, { iss: 'http://127.0.0.1:1/elsewhere' }),
      'wrong audience': forge(k1, { aud: 'urn:another-api' }),
      'alg none': `${b64({ alg: 'none', typ: 'JWT', kid: 'k1' })}.${b64(claims)}.`,
      'HS256 signed with the public key': `${hsInput}.${createHmac('sha256', k1.publicPem).update(hsInput).digest('base64url')}`,
      'unknown kid': forge(attacker),
      expired: forge(k1, { iat: now - 7200, exp: now - 3600 }),
      'jku header': forge(attacker, {}, { kid: 'k1', jku: baitUrl }),
      'x5u header': forge(attacker, {}, { kid: 'k1', x5u: baitUrl }),
    };
    for (const [name, token] of Object.entries(refused)) {
      const answer = await whoami(token);
      expect(answer.status, name).toBe(401);
      expect(answer.headers.get('www-authenticate'), name).toBe('Bearer error="invalid_token"');
    }
    expect(baitRequests).toBe(0);
  });

  it('refuses a reserved user id as the subject, at verification and at issue', async () => {
    const chatToken = await provider.accessToken('chat:lark:oc_1');
    const answer = await json(await whoami(chatToken));
    expect(answer.status).toBe(401);
    expect(JSON.stringify(answer.body)).toContain('reserved');
    for (const userId of ['chat:lark:oc_1', 'task:t1']) {
      const result = await runEntry(TOKEN_ISSUE, [userId], env);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('is reserved');
    }
    const minted = await fetch(`${service.url}/api/dev/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'chat:lark:oc_1' }),
    });
    expect(await json(minted)).toMatchObject({
      status: 400,
      body: { error: { code: 'user_id_reserved' } },
    });
    // The reserved user ids are the agent runtime's reserved session ids.
    expect([...RESERVED_USER_ID_PREFIXES]).toEqual([...RESERVED_SESSION_ID_PREFIXES]);
  });

  it('accepts a rotated-in kid without a restart and keeps cached keys while the provider is down', async () => {
    const beforeRotation = await provider.accessToken('app-user');
    await provider.stop();
    provider = await startOidcProvider({ keys: [k2, k1], audience: AUDIENCE, port: provider.port });
    const rotated = await provider.accessToken('app-user');
    expect(jwt.decode(rotated, { complete: true })?.header).toMatchObject({ kid: 'k2' });
    // An unknown kid is looked up at most once per AUTH_JWKS_REFETCH_SECONDS: poll until then.
    await eventually(async () => (await whoami(rotated)).status === 200);
    await provider.stop();
    // The provider is down: tokens never seen before, signed with either cached key, still pass.
    for (const token of [beforeRotation, forge(k1, { sub: 'u-k1' }), forge(k2, { sub: 'u-k2' })]) {
      expect((await whoami(token)).status).toBe(200);
    }
    expect(await json(await whoami(forge(k2, { sub: 'u-k2b' })))).toEqual({
      status: 200,
      body: { user_id: 'u-k2b' },
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEntry } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { json, post, requireBuild } from './helpers.js';
import { eventually, openSocket, type TestSocket } from './ws-client.js';

const SERVICE_TOKEN = 'login-layer-credential-0123456789';
const TOKEN_REVOKE = 'apps/all-in-one/dist/token-revoke.js';

/**
 * The login layer's token endpoint and revocation (docs/auth.md), across two API replicas and a
 * gateway on shared Redis and PostgreSQL: whatever one replica (or `pnpm token:revoke`) revokes,
 * every replica and the gateway refuse.
 */
describe('token endpoint and revocation', () => {
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  const api = (i: number) => cluster.apis[i]!.url;
  const service = { authorization: `Bearer ${SERVICE_TOKEN}` };
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const whoami = async (i: number, token: string) =>
    (await fetch(`${api(i)}/api/auth/whoami`, { headers: bearer(token) })).status;
  const refresh = async (i: number, refreshToken: string) =>
    (await post(`${api(i)}/api/auth/refresh`, { refreshToken })).status;
  /** A pair from the login-layer endpoint; the access token is issued a second before now. */
  const signIn = async (userId: string) => {
    const res = await json(await post(`${api(0)}/api/auth/token`, { user_id: userId }, service));
    expect(res.status).toBe(200);
    const { refreshToken } = res.body as { refreshToken: string };
    // Signed a second earlier, so a revocation within this second certainly covers it.
    return { refreshToken, accessToken: await cluster.token(userId, Date.now() - 1000) };
  };
  const connectWeb = async (userId: string, token: string) => {
    const socket = await openSocket(cluster.wsUrl(0, '/ws/web', { user_id: userId, token }));
    sockets.push(socket);
    return socket;
  };
  /** A token issued after a revocation made now: its `iat` must be a later second. */
  const nextSecond = () =>
    new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 50));

  beforeAll(async () => {
    requireBuild(TOKEN_REVOKE);
    cluster = await startCluster({
      gateways: 1,
      apis: 2,
      env: { AUTH_SERVICE_TOKEN: SERVICE_TOKEN },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
  });

  it('POST /api/auth/token needs the service credential and answers a working pair', async () => {
    const url = `${api(0)}/api/auth/token`;
    const body = { user_id: 'olga' };
    const userToken = await cluster.token('olga');
    for (const headers of [{}, bearer('wrong-credential-0123456789'), bearer(userToken)]) {
      const res = await json(await post(url, body, headers));
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { code: 'unauthorized' } });
    }
    const res = await json(await post(url, body, service));
    expect(res.status).toBe(200);
    const pair = res.body as { refreshToken: string; accessToken: string; expiresIn: number };
    expect(pair.expiresIn).toBe(3600);
    // The pair works on the other replica: the access token now, the refresh token for a new one.
    expect(
      await fetch(`${api(1)}/api/auth/whoami`, { headers: bearer(pair.accessToken) }).then((r) =>
        r.json(),
      ),
    ).toEqual({ user_id: 'olga' });
    expect(await refresh(1, pair.refreshToken)).toBe(200);

    for (const bad of [{}, { user_id: '' }, { user_id: 'has space' }]) {
      const answer = await json(await post(url, bad, service));
      expect(answer.status, JSON.stringify(bad)).toBe(400);
      expect(answer.body).toMatchObject({ error: { code: 'invalid_request' } });
    }
    // The service's own ids (a chat's, a scheduled task's) are never a token's user.
    const reserved = await json(await post(url, { user_id: 'chat:lark:oc_1' }, service));
    expect(reserved.status).toBe(400);
    expect(reserved.body).toMatchObject({ error: { code: 'user_id_reserved' } });
  });

  it('the operator endpoints are 404 where AUTH_SERVICE_TOKEN is not set', async () => {
    const plain = await cluster.startReplica('api', 'api-plain', { AUTH_SERVICE_TOKEN: '' });
    for (const path of ['/api/auth/token', '/api/auth/revoke-user']) {
      const res = await post(`${plain.url}${path}`, { user_id: 'olga' }, service);
      expect(res.status, path).toBe(404);
    }
  });

  it('a refresh token revoked by its holder fails at once on every replica', async () => {
    const { refreshToken } = await signIn('pia');
    expect(await refresh(1, refreshToken)).toBe(200);
    const revoked = await json(await post(`${api(0)}/api/auth/revoke`, { refreshToken }));
    expect(revoked).toEqual({ status: 200, body: {} });
    expect(await refresh(0, refreshToken)).toBe(401);
    expect(await refresh(1, refreshToken)).toBe(401);
    // Revoking again, or a token that never existed, is the same 200 (RFC 7009).
    for (const token of [refreshToken, 'rt_never-issued']) {
      expect(await json(await post(`${api(1)}/api/auth/revoke`, { refreshToken: token }))).toEqual({
        status: 200,
        body: {},
      });
    }
  });

  it("the operator's revoke-user ends the user's tokens on every replica and closes their sockets", async () => {
    const victim = await signIn('quinn');
    const bystander = await signIn('rosa');
    const socket = await connectWeb('quinn', victim.accessToken);
    const other = await connectWeb('rosa', bystander.accessToken);
    expect(await whoami(1, victim.accessToken)).toBe(200);

    const wrong = await post(
      `${api(1)}/api/auth/revoke-user`,
      { user_id: 'quinn' },
      bearer(victim.accessToken),
    );
    expect(wrong.status).toBe(401);
    const res = await json(
      await post(`${api(1)}/api/auth/revoke-user`, { user_id: 'quinn' }, service),
    );
    expect(res).toEqual({ status: 200, body: { user_id: 'quinn', refresh_tokens_revoked: 1 } });

    // The refresh token at once, everywhere; access tokens as each replica reads the cutoff.
    expect(await refresh(0, victim.refreshToken)).toBe(401);
    expect(await refresh(1, victim.refreshToken)).toBe(401);
    await eventually(async () => (await whoami(0, victim.accessToken)) === 401);
    expect(await whoami(1, victim.accessToken)).toBe(401);
    expect(await socket.closed).toEqual({ code: 4401, reason: 'token has been revoked' });
    const again = await connectWeb('quinn', victim.accessToken);
    expect(await again.closed).toEqual({ code: 4401, reason: 'token has been revoked' });

    // Other users are untouched; the user signs in again and is back.
    expect(await whoami(0, bystander.accessToken)).toBe(200);
    expect(other.ws.readyState).toBe(other.ws.OPEN);
    await nextSecond();
    const fresh = await json(await post(`${api(0)}/api/auth/token`, { user_id: 'quinn' }, service));
    const { accessToken } = fresh.body as { accessToken: string };
    expect(await whoami(1, accessToken)).toBe(200);
  });

  it('DELETE /api/auth/sessions signs the caller out everywhere', async () => {
    const first = await signIn('sam');
    const second = await signIn('sam');
    const res = await fetch(`${api(0)}/api/auth/sessions`, {
      method: 'DELETE',
      headers: bearer(first.accessToken),
    });
    expect(await json(res)).toEqual({
      status: 200,
      body: { user_id: 'sam', refresh_tokens_revoked: 2 },
    });
    for (const { refreshToken } of [first, second])
      expect(await refresh(1, refreshToken)).toBe(401);
    // This replica refuses at once; the other once it read the cutoff.
    expect(await whoami(0, first.accessToken)).toBe(401);
    await eventually(async () => (await whoami(1, first.accessToken)) === 401);
  });

  it('pnpm token:revoke revokes a user through the store, seen by every replica and the gateway', async () => {
    const { refreshToken, accessToken } = await signIn('tess');
    const socket = await connectWeb('tess', accessToken);
    const revoked = await runEntry(TOKEN_REVOKE, ['tess'], cluster.env);
    expect(revoked.stderr).toBe('');
    expect(JSON.parse(revoked.stdout)).toEqual({ user_id: 'tess', refresh_tokens_revoked: 1 });
    expect(await refresh(0, refreshToken)).toBe(401);
    await eventually(async () => (await whoami(0, accessToken)) === 401);
    await eventually(async () => (await whoami(1, accessToken)) === 401);
    expect(await socket.closed).toEqual({ code: 4401, reason: 'token has been revoked' });

    const usage = await runEntry(TOKEN_REVOKE, [], cluster.env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: pnpm token:revoke <user_id>');
  });
});

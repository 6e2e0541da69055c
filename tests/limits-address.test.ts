import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';

/**
 * Rates keyed by client address (docs/limits.md): `POST /api/auth/refresh` and the chat webhook,
 * counted for both API replicas together. `TRUST_PROXY` decides whether `X-Forwarded-For` names
 * the address: not by default (a client cannot pick a fresh address per request), yes behind a
 * proxy (each client is counted apart).
 */
const LIMITS = { RATE_LIMIT_REFRESH_PER_MINUTE: '3', RATE_LIMIT_WEBHOOK_PER_MINUTE: '3' };

const refresh = (cluster: Cluster, replica: number, forwardedFor?: string) =>
  fetch(`${cluster.apis[replica]!.url}/api/auth/refresh`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
    body: JSON.stringify({ refreshToken: 'not-a-token' }),
  });

async function expectRateLimited(response: Response, limit: string) {
  expect(response.status).toBe(429);
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(response.headers.get('ratelimit-policy')).toBe(`"${limit}";q=3;w=60`);
  expect(await response.json()).toMatchObject({
    error: { code: 'rate_limited', details: { limit } },
  });
}

describe('per-address rates, X-Forwarded-For not trusted (default)', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ gateways: 0, apis: 2, env: LIMITS });
  });
  afterAll(() => cluster?.stop());

  it('counts refreshes by the peer address whatever X-Forwarded-For says', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await refresh(cluster, i % 2, `203.0.113.${i}`);
      statuses.push(response.status);
      await response.body?.cancel();
    }
    // An unknown refresh token is 401 in the flat shape the specification fixes.
    expect(statuses).toEqual([401, 401, 401]);
    await expectRateLimited(await refresh(cluster, 1, '198.51.100.7'), 'refresh');
    await expectRateLimited(await refresh(cluster, 0), 'refresh');
  });

  it('counts webhook requests by address for both replicas', async () => {
    const post = (replica: number) =>
      fetch(`${cluster.apis[replica]!.url}/channels/lark/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': `192.0.2.${replica}` },
        body: JSON.stringify({ type: 'url_verification', challenge: 'c', token: 't' }),
      });
    for (let i = 0; i < 3; i++) {
      const response = await post(i % 2);
      expect(response.status).not.toBe(429);
      await response.body?.cancel();
    }
    await expectRateLimited(await post(1), 'webhook');
  });
});

describe('per-address rates behind a proxy (TRUST_PROXY=true)', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ gateways: 0, apis: 2, env: { ...LIMITS, TRUST_PROXY: 'true' } });
  });
  afterAll(() => cluster?.stop());

  it('counts each forwarded client apart, by the address the proxy appended', async () => {
    for (let i = 0; i < 3; i++) {
      // A client's own X-Forwarded-For entry before the proxy's is not believed.
      const response = await refresh(cluster, i % 2, `10.9.9.${i}, 203.0.113.10`);
      expect(response.status).toBe(401);
      await response.body?.cancel();
    }
    await expectRateLimited(await refresh(cluster, 1, '203.0.113.10'), 'refresh');
    // Another client behind the same proxy is untouched.
    const other = await refresh(cluster, 0, '203.0.113.11');
    expect(other.status).toBe(401);
    expect(other.headers.get('ratelimit')).toMatch(/^"refresh";r=2;t=\d+$/);
  });
});

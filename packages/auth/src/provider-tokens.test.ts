/**
 * The identity provider's tokens against a real OpenID provider (`oidc-provider`) on loopback,
 * issuing JWT access tokens; the key cache's clock is the test's, so "at most one fetch per
 * interval" is checked without waiting.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jwt from 'jsonwebtoken';
import {
  providerSigningKey,
  startOidcProvider,
  type OidcProvider,
  type ProviderSigningKey,
} from '@agent-backend/testing';
import { createTokenVerifier } from './token-verifier.js';
import { throwawayKeys } from './keys.js';
import { createProviderTokenVerifier, withProviderTokens } from './provider-tokens.js';

const AUDIENCE = 'urn:agent-backend';
const REFETCH_MS = 30_000;
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('identity-provider tokens', () => {
  const k1 = providerSigningKey('k1');
  const k2 = providerSigningKey('k2');
  const attacker = providerSigningKey('attacker');
  let provider: OidcProvider;
  let clock = 1_000_000;
  let verifier: ReturnType<typeof createProviderTokenVerifier>;
  let verify: (token: string) => Promise<{ userId: string }>;
  /** A loopback server a token's `jku` / `x5u` header points at; it must never be asked. */
  let bait: Server;
  let baitRequests = 0;
  let baitUrl: string;

  /** A token signed by `key` with the provider's claims unless overridden. */
  const forge = (
    key: ProviderSigningKey,
    claims: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ) => {
    const now = Math.floor(Date.now() / 1000);
    const payload = {
      sub: 'app-user',
      iss: provider.issuer,
      aud: AUDIENCE,
      iat: now,
      exp: now + 600,
      ...claims,
    };
    return jwt.sign(
      Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined)),
      key.privateKey,
      { algorithm: key.alg, header: { alg: key.alg, kid: key.kid, ...header } },
    );
  };

  beforeAll(async () => {
    provider = await startOidcProvider({
      keys: [k1],
      audience: AUDIENCE,
      clients: ['app-user', 'chat:lark:oc_1', 'task:t1'],
    });
    verifier = createProviderTokenVerifier(
      { jwksUrl: provider.discoveryUrl, issuer: provider.issuer, audience: [AUDIENCE] },
      { minRefetchIntervalMs: REFETCH_MS, now: () => clock },
    );
    verify = withProviderTokens(createTokenVerifier(await throwawayKeys()), verifier);
    bait = createServer((_request, response) => {
      baitRequests += 1;
      response.end(JSON.stringify({ keys: [attacker.jwk] }));
    });
    await new Promise<void>((resolve) => bait.listen(0, '127.0.0.1', resolve));
    baitUrl = `http://127.0.0.1:${(bait.address() as AddressInfo).port}/jwks`;
  });
  afterAll(async () => {
    await provider?.stop();
    await new Promise((resolve) => bait?.close(resolve));
  });

  it('accepts an access token of the provider; its subject is the user', async () => {
    const token = await provider.accessToken('app-user');
    expect(jwt.decode(token, { complete: true })?.header).toMatchObject({ kid: 'k1' });
    await expect(verify(token)).resolves.toMatchObject({ userId: 'app-user' });
    expect(verifier.keys.fetchCount).toBe(1);
  });

  it('refuses a flood of unknown kids with at most one fetch per interval', async () => {
    const before = provider.jwksRequests();
    for (let i = 0; i < 50; i += 1) {
      const forged = forge(attacker, {}, { kid: `forged-${i}` });
      await expect(verify(forged)).rejects.toThrow(/not one of the identity provider's keys/);
    }
    // The first check of a fresh instance fetched less than the interval ago: nothing more.
    expect(provider.jwksRequests() - before).toBe(0);
    clock += REFETCH_MS;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        expect(verify(forge(attacker, {}, { kid: `forged-b${i}` }))).rejects.toThrow(),
      ),
    );
    expect(provider.jwksRequests() - before).toBe(1);
  });

  it('refuses wrong issuer, audience, algorithm, expired, and keys named by the token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const refused: Record<string, [string, RegExp]> = {
      // Not the provider's issuer: checked as the service's own token, whose key set has no such kid.
      'wrong issuer': [forge(k1, { iss: 'http://127.0.0.1:1/other' }), /key id \(kid\) is unknown/],
      'wrong audience': [forge(k1, { aud: 'urn:another-api' }), /audience/],
      expired: [forge(k1, { iat: now - 7200, exp: now - 3600 }), /expired/],
      'alg none': [
        `${b64({ alg: 'none', typ: 'JWT', kid: 'k1' })}.${b64({ sub: 'app-user', iss: provider.issuer, aud: AUDIENCE, exp: now + 600 })}.`,
        /algorithm is not allowed/,
      ],
      'HS256 signed with the public key': [
        (() => {
          const input = `${b64({ alg: 'HS256', typ: 'JWT', kid: 'k1' })}.${b64({ sub: 'app-user', iss: provider.issuer, aud: AUDIENCE, exp: now + 600 })}`;
          return `${input}.${createHmac('sha256', k1.publicPem).update(input).digest('base64url')}`;
        })(),
        /algorithm is not allowed/,
      ],
      'unknown kid': [forge(attacker), /not one of the identity provider's keys/],
      'jku header': [forge(attacker, {}, { kid: 'k1', jku: baitUrl }), /signature is invalid/],
      'x5u header': [forge(attacker, {}, { kid: 'k1', x5u: baitUrl }), /signature is invalid/],
      'embedded jwk': [
        forge(attacker, {}, { kid: 'k1', jwk: { ...attacker.jwk, d: undefined } }),
        /signature is invalid/,
      ],
      'no exp': [forge(k1, { exp: undefined }), /"exp"/],
    };
    clock += REFETCH_MS;
    for (const [name, [token, reason]] of Object.entries(refused)) {
      await expect(verify(token), name).rejects.toThrow(reason);
    }
    // Sent to the provider's verifier itself (not routed by `iss`), the wrong issuer is named.
    await expect(verifier.verify(refused['wrong issuer']![0])).rejects.toThrow(/issuer/);
    expect(baitRequests).toBe(0);
  });

  it('refuses a reserved user id as the subject', async () => {
    await expect(verify(await provider.accessToken('chat:lark:oc_1'))).rejects.toThrow(/reserved/);
    await expect(verify(await provider.accessToken('task:t1'))).rejects.toThrow(/reserved/);
  });

  it('accepts a rotated-in kid without a restart, and cached keys while the provider is down', async () => {
    const before = await provider.accessToken('app-user');
    await provider.stop();
    // Rotation: the provider comes back on the same address signing with k2, still publishing k1.
    provider = await startOidcProvider({ keys: [k2, k1], audience: AUDIENCE, port: provider.port });
    const rotated = await provider.accessToken('app-user');
    expect(jwt.decode(rotated, { complete: true })?.header).toMatchObject({ kid: 'k2' });
    clock += REFETCH_MS;
    await expect(verify(rotated)).resolves.toMatchObject({ userId: 'app-user' });
    const fresh = await provider.accessToken('app-user');
    await provider.stop();
    // Down, with the cached set long past its age: both keys still verify new tokens.
    clock += 3_600_000;
    const fetchesBefore = verifier.keys.fetchCount;
    await expect(verify(before)).resolves.toMatchObject({ userId: 'app-user' });
    await expect(verify(fresh)).resolves.toMatchObject({ userId: 'app-user' });
    await expect(verify(forge(k1, { sub: 'other-user' }))).resolves.toMatchObject({
      userId: 'other-user',
    });
    // The stale set is refreshed in the background, at most once per interval while it fails.
    expect(verifier.keys.fetchCount - fetchesBefore).toBeLessThanOrEqual(1);
    provider = await startOidcProvider({ keys: [k2, k1], audience: AUDIENCE, port: provider.port });
  });

  it("takes the user id from AUTH_USER_CLAIM and checks the JWKS URL's keys", async () => {
    const byEmail = createProviderTokenVerifier(
      {
        jwksUrl: provider.jwksUrl,
        issuer: provider.issuer,
        audience: [AUDIENCE],
        userClaim: 'email',
      },
      { now: () => clock },
    );
    await expect(byEmail.verify(forge(k2, { email: 'ada@example.com' }))).resolves.toMatchObject({
      userId: 'ada@example.com',
    });
    await expect(byEmail.verify(forge(k2))).rejects.toThrow(/"email"/);
  });
});

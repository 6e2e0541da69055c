import { createHmac, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jwt from 'jsonwebtoken';
import { createPgliteDatabase, migrate, type Database } from '@agent-backend/store';
import {
  ACCESS_TOKEN_TTL_SECONDS,
  hashRefreshToken,
  importKeys,
  InvalidRefreshTokenError,
  InvalidTokenError,
  loadOrCreateDevKeys,
  REFRESH_TOKEN_TTL_MS,
  RefreshTokenService,
  signAccessToken,
  verifyAccessToken,
  type KeyPair,
} from './index.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function pemPair() {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InvalidTokenError);
  return (error as InvalidTokenError).reason;
}

describe('access tokens', () => {
  let pem: ReturnType<typeof pemPair>;
  let keys: KeyPair;
  beforeAll(async () => {
    pem = pemPair();
    keys = await importKeys(pem);
  });

  it('signs RS256 tokens whose sub is the user and that last one hour', async () => {
    const now = Date.now();
    const { accessToken, expiresIn } = await signAccessToken(keys, 'user-1', now);
    expect(expiresIn).toBe(3600);
    const header = JSON.parse(Buffer.from(accessToken.split('.')[0]!, 'base64url').toString());
    expect(header.alg).toBe('RS256');
    const verified = await verifyAccessToken(keys, accessToken);
    expect(verified.userId).toBe('user-1');
    expect(verified.exp).toBe(Math.floor(now / 1000) + ACCESS_TOKEN_TTL_SECONDS);
  });

  it('refuses expired tokens', async () => {
    const { accessToken } = await signAccessToken(keys, 'u', Date.now() - 2 * 3600_000);
    expect(await reasonOf(verifyAccessToken(keys, accessToken))).toBe('expired');
  });

  it('refuses unsigned tokens (alg: none)', async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const token = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'attacker', exp })}.`;
    expect(await reasonOf(verifyAccessToken(keys, token))).toBe('bad_algorithm');
  });

  it('refuses HS256 tokens signed with the public key as the HMAC secret', async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'attacker', exp })}`;
    const signature = createHmac('sha256', pem.publicKey).update(input).digest('base64url');
    expect(await reasonOf(verifyAccessToken(keys, `${input}.${signature}`))).toBe('bad_algorithm');
  });

  it('refuses tokens signed by another key, without exp or sub, and garbage', async () => {
    const other = await importKeys(pemPair());
    const { accessToken: foreign } = await signAccessToken(other, 'u');
    expect(await reasonOf(verifyAccessToken(keys, foreign))).toBe('bad_signature');

    const noExp = jwt.sign({ sub: 'u' }, keys.privateKey!, { algorithm: 'RS256' });
    expect(await reasonOf(verifyAccessToken(keys, noExp))).toBe('bad_claims');
    const noSub = jwt.sign({}, keys.privateKey!, { algorithm: 'RS256', expiresIn: '1h' });
    expect(await reasonOf(verifyAccessToken(keys, noSub))).toBe('bad_claims');

    for (const garbage of ['', 'abc', 'a.b.c', `${b64({ alg: 'RS256' })}.%%%.x`]) {
      expect(await reasonOf(verifyAccessToken(keys, garbage))).toBe('malformed');
    }
  });

  it('explains a bad PEM', async () => {
    await expect(importKeys({ publicKey: 'not a pem' })).rejects.toThrow(
      /public key is not an RSA SPKI PEM/,
    );
  });

  it('generates development keys once and reuses them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    const first = await loadOrCreateDevKeys(dir);
    const second = await loadOrCreateDevKeys(dir);
    expect(second).toEqual(first);
    expect(statSync(join(dir, 'jwt-private.pem')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'jwt-public.pem'), 'utf8')).toContain('BEGIN PUBLIC KEY');
    const imported = await importKeys(first);
    const { accessToken } = await signAccessToken(imported, 'u');
    expect((await verifyAccessToken(imported, accessToken)).userId).toBe('u');
  });
});

describe('refresh tokens', () => {
  let db: Database;
  let keys: KeyPair;
  beforeAll(async () => {
    db = await createPgliteDatabase();
    await migrate(db);
    keys = await importKeys(pemPair());
  });
  afterAll(async () => {
    await db.close();
  });

  it('stores only the SHA-256 hash, expiring in 30 days', async () => {
    const now = Date.UTC(2026, 0, 1);
    const service = new RefreshTokenService(db, keys, () => now);
    const { refreshToken, expiresAt } = await service.issue('user-7');
    expect(refreshToken).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(expiresAt.getTime()).toBe(now + REFRESH_TOKEN_TTL_MS);
    const { rows } = await db.query('SELECT * FROM refresh_tokens WHERE user_id = $1', ['user-7']);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.token_hash).toBe(hashRefreshToken(refreshToken));
    expect(JSON.stringify(rows)).not.toContain(refreshToken);
  });

  it('exchanges a live token for an access token of its user', async () => {
    const service = new RefreshTokenService(db, keys);
    const { refreshToken } = await service.issue('user-8');
    const result = await service.exchange(refreshToken);
    expect(result.expiresIn).toBe(3600);
    expect((await verifyAccessToken(keys, result.accessToken)).userId).toBe('user-8');
    // Not rotated: the same refresh token keeps working until it expires or is revoked.
    await expect(service.exchange(refreshToken)).resolves.toMatchObject({ userId: 'user-8' });
  });

  it('refuses unknown, expired and revoked tokens alike', async () => {
    let now = Date.now();
    const service = new RefreshTokenService(db, keys, () => now);
    await expect(service.exchange('rt_unknown')).rejects.toBeInstanceOf(InvalidRefreshTokenError);

    const { refreshToken: expiring } = await service.issue('user-9');
    now += REFRESH_TOKEN_TTL_MS + 1;
    await expect(service.exchange(expiring)).rejects.toBeInstanceOf(InvalidRefreshTokenError);

    now = Date.now();
    const { refreshToken: revoked } = await service.issue('user-9');
    expect(await service.revoke(revoked)).toBe('user-9');
    await expect(service.exchange(revoked)).rejects.toBeInstanceOf(InvalidRefreshTokenError);
  });
});

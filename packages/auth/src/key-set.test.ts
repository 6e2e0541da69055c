import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { afterEach, describe, expect, it } from 'vitest';
import { KeySetFile, keyId, signAccessToken, verifyAccessToken, importKeys } from './index.js';

const pem = () =>
  generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });

describe('key set file', () => {
  const opened: KeySetFile[] = [];
  afterEach(() => opened.splice(0).forEach((keys) => keys.close()));

  /** A key set with an old key (retired at `verifyUntil`) and a new one active from `activeFrom`. */
  async function keySet(clock: { now: number }, activeFrom: number, verifyUntil: number) {
    const [oldPem, newPem] = [pem(), pem()];
    const [oldKid, newKid] = [
      keyId((await importKeys(oldPem)).publicKey),
      keyId((await importKeys(newPem)).publicKey),
    ];
    const file = join(mkdtempSync(join(tmpdir(), 'keyset-')), 'keys.json');
    writeFileSync(
      file,
      JSON.stringify({
        keys: [
          {
            kid: oldKid,
            ...oldPem,
            activeFrom: new Date(0).toISOString(),
            verifyUntil: new Date(verifyUntil).toISOString(),
          },
          { kid: newKid, ...newPem, activeFrom: new Date(activeFrom).toISOString() },
        ],
      }),
    );
    const keys = new KeySetFile(file, { now: () => clock.now });
    opened.push(keys);
    return { keys, oldPem, oldKid, newKid };
  }

  it('signs with the newest active key and verifies the retired one until its verifyUntil', async () => {
    const clock = { now: Date.now() };
    const { keys, oldKid, newKid } = await keySet(clock, clock.now + 10_000, clock.now + 20_000);
    const before = (await signAccessToken(keys, 'ann', clock.now)).accessToken;
    expect(jwt.decode(before, { complete: true })!.header.kid).toBe(oldKid);
    clock.now += 10_000;
    const after = (await signAccessToken(keys, 'ann', clock.now)).accessToken;
    expect(jwt.decode(after, { complete: true })!.header.kid).toBe(newKid);
    expect(await verifyAccessToken(keys, before)).toMatchObject({ userId: 'ann' });
    clock.now += 10_000;
    await expect(verifyAccessToken(keys, before)).rejects.toMatchObject({
      reason: 'bad_signature',
      message: 'token key id (kid) is unknown',
    });
    expect(await verifyAccessToken(keys, after)).toMatchObject({ userId: 'ann' });
  });

  it('accepts a token without kid signed by any key of the set; a named one must carry iss and aud', async () => {
    const clock = { now: Date.now() };
    const { keys, oldPem, oldKid } = await keySet(clock, clock.now, clock.now + 60_000);
    const iat = Math.floor(clock.now / 1000);
    const legacy = jwt.sign({ sub: 'bo', iat, exp: iat + 600 }, oldPem.privateKey, {
      algorithm: 'RS256',
    });
    expect(await verifyAccessToken(keys, legacy)).toMatchObject({ userId: 'bo' });
    const foreign = jwt.sign(
      { sub: 'bo', iat, exp: iat + 600, iss: 'elsewhere' },
      oldPem.privateKey,
      {
        algorithm: 'RS256',
        keyid: oldKid,
      },
    );
    await expect(verifyAccessToken(keys, foreign)).rejects.toMatchObject({ reason: 'bad_claims' });
  });
});

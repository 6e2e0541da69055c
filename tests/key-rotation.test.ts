import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEntry } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { json, keyFiles, post, requireBuild, tempDir } from './helpers.js';
import { openSocket } from './ws-client.js';

const SERVICE_TOKEN = 'login-layer-credential-0123456789';
const KEYS_ROTATE = 'apps/all-in-one/dist/keys-rotate.js';

/**
 * Signing keys with ids (docs/auth.md): a deployment that signed with one PEM pair moves to a
 * key set file and rotates it under load; two API replicas and a gateway read the same file.
 */
describe('signing keys with ids and rotation', () => {
  let cluster: Cluster;
  /** The PEM pair the deployment used before key sets: its tokens carry no `kid`. */
  const legacy = keyFiles();
  const keysFile = join(tempDir('keyset'), 'jwt-keys.json');
  const rotateEnv = {
    DATA_DIR: tempDir('keyset-data'),
    JWT_KEYS_FILE: keysFile,
    JWT_PUBLIC_KEY_FILE: legacy.publicKeyFile,
    JWT_PRIVATE_KEY_FILE: legacy.privateKeyFile,
  };
  const api = (i: number) => cluster.apis[i]!.url;
  const whoami = async (i: number, token: string) =>
    (await fetch(`${api(i)}/api/auth/whoami`, { headers: { authorization: `Bearer ${token}` } }))
      .status;
  const kidOf = (token: string) => jwt.decode(token, { complete: true })!.header.kid;
  const signIn = async (userId: string) => {
    const res = await json(
      await post(
        `${api(0)}/api/auth/token`,
        { user_id: userId },
        {
          authorization: `Bearer ${SERVICE_TOKEN}`,
        },
      ),
    );
    expect(res.status).toBe(200);
    return res.body as { refreshToken: string; accessToken: string };
  };
  const jwks = async () =>
    ((await (await fetch(`${api(1)}/.well-known/jwks.json`)).json()) as { keys: JsonWebKey[] })
      .keys;
  const rotate = async () => {
    const result = await runEntry(KEYS_ROTATE, ['--activate-in', '8'], rotateEnv);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as { kid: string; retired: string };
  };

  beforeAll(async () => {
    requireBuild(KEYS_ROTATE);
    // The first rotation seeds the file with the pair in use; the new key signs 8 s later.
    await rotate();
    cluster = await startCluster({
      gateways: 1,
      apis: 2,
      env: { AUTH_SERVICE_TOKEN: SERVICE_TOKEN, JWT_KEYS_FILE: keysFile },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("publishes its public keys, which verify the service's tokens with kid, iss and aud", async () => {
    const { accessToken } = await signIn('uma');
    const decoded = jwt.decode(accessToken, { complete: true })!;
    expect(decoded.payload).toMatchObject({
      sub: 'uma',
      iss: 'agent-backend',
      aud: 'agent-backend',
    });
    const keys = await jwks();
    expect(keys.length).toBe(2);
    const jwk = keys.find((key) => key.kid === decoded.header.kid);
    expect(jwk).toMatchObject({ kty: 'RSA', use: 'sig', alg: 'RS256' });
    const publicKey = createPublicKey({ key: jwk!, format: 'jwk' });
    const claims = jwt.verify(accessToken, publicKey, {
      algorithms: ['RS256'],
      issuer: 'agent-backend',
      audience: 'agent-backend',
    }) as jwt.JwtPayload;
    expect(claims.sub).toBe('uma');
  });

  it('tokens signed before keys had ids are accepted until they expire; unknown ids are not', async () => {
    const privateKey = readFileSync(legacy.privateKeyFile, 'utf8');
    const now = Math.floor(Date.now() / 1000);
    const old = jwt.sign({ sub: 'vera', iat: now, exp: now + 600 }, privateKey, {
      algorithm: 'RS256',
    });
    expect(kidOf(old)).toBeUndefined();
    expect(await whoami(0, old)).toBe(200);
    expect(await whoami(1, old)).toBe(200);
    const socket = await openSocket(cluster.wsUrl(0, '/ws/web', { user_id: 'vera', token: old }));
    socket.send({ type: 'ping' });
    expect(await socket.next((frame) => frame.type === 'pong')).toEqual({ type: 'pong' });
    socket.ws.terminate();

    const unknown = jwt.sign(
      { sub: 'vera', iat: now, exp: now + 600, iss: 'agent-backend', aud: 'agent-backend' },
      privateKey,
      { algorithm: 'RS256', keyid: 'no-such-key' },
    );
    expect(await whoami(0, unknown)).toBe(401);
  });

  it('a client making requests throughout a rotation never gets a 401', async () => {
    const { refreshToken, accessToken: beforeRotation } = await signIn('wes');
    const statuses: number[] = [];
    const kids = new Set<string | undefined>();
    let stop = false;
    // Refresh on one replica, use the token on the other, round and round.
    const client = (async () => {
      for (let i = 0; !stop; i++) {
        const res = await json(await post(`${api(i % 2)}/api/auth/refresh`, { refreshToken }));
        statuses.push(res.status);
        const { accessToken } = res.body as { accessToken: string };
        kids.add(kidOf(accessToken));
        statuses.push(await whoami((i + 1) % 2, accessToken));
      }
    })();
    const rotated = await rotate();
    // Until both replicas sign with the new key and the other verified what each signed.
    const deadline = Date.now() + 60_000;
    while (!kids.has(rotated.kid) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    const seen = statuses.length;
    while (statuses.length < seen + 20) await new Promise((r) => setTimeout(r, 50));
    stop = true;
    await client;

    expect(kids.has(rotated.kid)).toBe(true);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // A token of the retired key goes on working after the switch, everywhere.
    expect(kidOf(beforeRotation)).not.toBe(rotated.kid);
    expect([await whoami(0, beforeRotation), await whoami(1, beforeRotation)]).toEqual([200, 200]);
    // The retired key is still published: its tokens verify until they expire.
    const published = (await jwks()).map((key) => key.kid);
    expect(published).toEqual(expect.arrayContaining([rotated.kid, rotated.retired]));
  });
});

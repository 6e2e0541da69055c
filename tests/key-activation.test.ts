import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { afterEach, describe, expect, it } from 'vitest';
import { KeySetFile, signAccessToken, verifyAccessToken } from '@agent-backend/auth';
import { runEntry } from '@agent-backend/testing';
import { keyFiles, requireBuild, tempDir } from './helpers.js';

const KEYS_ROTATE = 'apps/all-in-one/dist/keys-rotate.js';

/**
 * `pnpm keys:rotate --activate-in <seconds>` (docs/auth.md, "Rotating the signing key"): the key
 * it adds is published for verification at once but signs nothing until its activation time,
 * so every process knows it before any token carries it. The key set file is read as every
 * service reads it (`KeySetFile`), on a clock of the test's own instead of a wait.
 */
describe('a key added by keys:rotate', () => {
  const opened: KeySetFile[] = [];
  afterEach(() => opened.splice(0).forEach((keys) => keys.close()));

  async function rotate(env: Record<string, string>, activateIn: number) {
    const result = await runEntry(KEYS_ROTATE, ['--activate-in', String(activateIn)], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as { kid: string; activeFrom: string; retired: string };
  }

  it('is not used for signing until its activation delay has passed', async () => {
    requireBuild(KEYS_ROTATE);
    const legacy = keyFiles();
    const file = join(tempDir('key-activation'), 'jwt-keys.json');
    const env = {
      DATA_DIR: tempDir('key-activation-data'),
      JWT_KEYS_FILE: file,
      JWT_PUBLIC_KEY_FILE: legacy.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: legacy.privateKeyFile,
    };
    // The first rotation seeds the file with the pair in use and adds a key; the second, with a
    // short delay, is the one under test.
    const first = await rotate(env, 0);
    const rotatedAt = Date.now();
    const added = await rotate(env, 3);
    expect(added.retired).toBe(first.kid);
    const activeFrom = Date.parse(added.activeFrom);
    expect(activeFrom).toBeGreaterThanOrEqual(rotatedAt + 3_000);

    const clock = { now: rotatedAt };
    const keys = new KeySetFile(file, { now: () => clock.now });
    opened.push(keys);
    const kidAt = async (now: number) => {
      clock.now = now;
      const { accessToken } = await signAccessToken(keys, 'ada', now);
      return jwt.decode(accessToken, { complete: true })!.header.kid;
    };

    // Announced: its public key verifies (other processes may already sign with it) ...
    expect([...keys.verificationKeys().keys()]).toEqual(
      expect.arrayContaining([first.kid, added.kid]),
    );
    // ... but until its activation time the key before it signs.
    expect(await kidAt(rotatedAt)).toBe(first.kid);
    expect(await kidAt(activeFrom - 1)).toBe(first.kid);
    expect(await kidAt(activeFrom)).toBe(added.kid);
    // A token of the retired key still verifies after the switch.
    clock.now = rotatedAt;
    const before = (await signAccessToken(keys, 'ada')).accessToken;
    clock.now = activeFrom + 1_000;
    expect(await verifyAccessToken(keys, before)).toMatchObject({ userId: 'ada' });
  });
});

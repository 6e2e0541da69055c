import { describe, expect, it } from 'vitest';
import {
  createTokenVerifier,
  InvalidTokenError,
  signAccessToken,
  throwawayKeys,
  type KeyPair,
} from './index.js';

/**
 * Whether a verifier remembered a token is seen from outside by swapping the public key it
 * checks with: a remembered token still passes, one checked again fails its signature.
 */
async function setup(options: { maxEntries?: number } = {}) {
  const signing = await throwawayKeys();
  const other = await throwawayKeys();
  const keys: Pick<KeyPair, 'publicKey'> = { publicKey: signing.publicKey };
  let clock = Date.now();
  const verify = createTokenVerifier(keys, { ...options, now: () => clock });
  return {
    verify,
    token: async (userId: string) => (await signAccessToken(signing, userId)).accessToken,
    swapKey: () => (keys.publicKey = other.publicKey),
    advance: (ms: number) => (clock += ms),
  };
}

describe('createTokenVerifier', () => {
  it('checks a token once and remembers it until it expires', async () => {
    const { verify, token, swapKey, advance } = await setup();
    const alice = await token('alice');
    const first = await verify(alice);
    expect(first).toMatchObject({ userId: 'alice' });
    swapKey();
    expect(await verify(alice)).toEqual(first);
    // Past its exp the token is checked again (and fails with the other key).
    advance(3_600_000);
    await expect(verify(alice)).rejects.toBeInstanceOf(InvalidTokenError);
  });

  it('never remembers a token it refused', async () => {
    const { verify, token } = await setup();
    const forged = `${(await token('bob')).slice(0, -4)}AAAA`;
    for (let i = 0; i < 2; i++) {
      await expect(verify(forged)).rejects.toMatchObject({ reason: 'bad_signature' });
    }
    await expect(verify('not-a-token')).rejects.toMatchObject({ reason: 'malformed' });
  });

  it('forgets the oldest token past maxEntries', async () => {
    const { verify, token, swapKey } = await setup({ maxEntries: 1 });
    const [a, b] = [await token('a'), await token('b')];
    await verify(a);
    await verify(b);
    swapKey();
    await expect(verify(a)).rejects.toMatchObject({ reason: 'bad_signature' });
    expect(await verify(b)).toMatchObject({ userId: 'b' });
  });
});

import type { KeyPair } from './keys.js';
import { verifyAccessToken, type VerifiedToken } from './access-tokens.js';

export interface TokenVerifierOptions {
  /** Most verified tokens remembered; the oldest is forgotten first. @default 10_000 */
  maxEntries?: number;
  /** The clock, in ms (tests). @default Date.now */
  now?: () => number;
}

/**
 * {@link verifyAccessToken} that remembers the tokens it verified until they expire, so a client
 * sending the same token with every request pays the RS256 signature check once, not per request
 * (it was about a fifth of the API's CPU per request). Access tokens are self-contained: nothing
 * can revoke one before its `exp`, so a remembered token is exactly as valid as a checked one.
 * Only valid tokens are remembered; any other is checked (and refused) every time. A remembered
 * token is used only while `exp` is ahead of the clock (without the check's 5 s tolerance).
 * Memory: at most `maxEntries` tokens (under 1 KB each).
 */
export function createTokenVerifier(
  keys: Pick<KeyPair, 'publicKey'>,
  options: TokenVerifierOptions = {},
): (token: string) => Promise<VerifiedToken> {
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  const verified = new Map<string, VerifiedToken>();
  return async (token) => {
    const known = verified.get(token);
    if (known) {
      if (known.exp * 1000 > now()) return known;
      verified.delete(token);
    }
    const result = await verifyAccessToken(keys, token);
    if (result.exp * 1000 > now() && maxEntries > 0) {
      if (verified.size >= maxEntries) verified.delete(verified.keys().next().value!);
      verified.set(token, result);
    }
    return result;
  };
}

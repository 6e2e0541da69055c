import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { EphemeralStore } from '@agent-backend/ephemeral';

/** A token pair after a refresh; `expiresAt` in ms since the epoch. */
export interface RefreshedTokens {
  readonly accessToken: string;
  readonly refreshToken?: string;
  readonly expiresAt?: number;
}

/** Why a refresh could not give a new token (an `invalid_grant`, a token endpoint down). */
export class RefreshFailedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefreshFailedError';
  }
}

/** How long a new pair stays readable for the other replicas that wanted the same refresh. */
const SHARED_PAIR_TTL_MS = 5 * 60_000;
/** How long one replica may take for the refresh before another may try. */
const LOCK_TTL_MS = 15_000;

const hash = (label: string, value: string) =>
  createHash('sha256').update(label).update('\0').update(value).digest();

/** The pair, sealed with a key only holders of the old refresh token can derive. */
function seal(refreshToken: string, tokens: RefreshedTokens): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', hash('seal', refreshToken), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(tokens), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function open(refreshToken: string, sealed: string): RefreshedTokens {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', hash('seal', refreshToken), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString(
    'utf8',
  );
  return JSON.parse(text) as RefreshedTokens;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `refresh` once per refresh token across every replica sharing the ephemeral store:
 * rotating refresh tokens die when used twice, so two replicas (or two calls of one run)
 * refreshing the same token at once must not both reach the provider. The first takes a lock
 * (keyed by a hash of the token, never the token) and stores the new pair for a few minutes,
 * sealed (AES-256-GCM) with a key derived from the old refresh token; the others wait for that
 * pair and use it. A failed refresh is not shared: the next caller tries again.
 */
export async function refreshOnce(
  ephemeral: EphemeralStore,
  provider: string,
  refreshToken: string,
  refresh: () => Promise<RefreshedTokens>,
  signal?: AbortSignal,
): Promise<RefreshedTokens> {
  const id = hash(`id:${provider}`, refreshToken).toString('hex');
  const pairKey = `oauth-refreshed:${id}`;
  const lockKey = `oauth-refreshing:${id}`;
  const deadline = Date.now() + LOCK_TTL_MS + 5_000;
  for (;;) {
    signal?.throwIfAborted();
    const shared = await ephemeral.get(pairKey);
    if (shared) return open(refreshToken, shared);
    const holder = randomBytes(8).toString('hex');
    if (await ephemeral.set(lockKey, holder, { ifAbsent: true, ttlMs: LOCK_TTL_MS })) {
      try {
        const again = await ephemeral.get(pairKey);
        if (again) return open(refreshToken, again);
        const tokens = await refresh();
        await ephemeral.set(pairKey, seal(refreshToken, tokens), { ttlMs: SHARED_PAIR_TTL_MS });
        return tokens;
      } finally {
        if ((await ephemeral.get(lockKey)) === holder) await ephemeral.delete(lockKey);
      }
    }
    if (Date.now() > deadline) {
      throw new RefreshFailedError('another refresh of this token did not finish in time');
    }
    await sleep(50);
  }
}

import { createPublicKey, type KeyObject } from 'node:crypto';
import type JwksRsa from 'jwks-rsa';

/**
 * jwks-rsa (with jose, ~75 modules), loaded once per process by the first {@link JwksCache}: only
 * a configured identity provider (`AUTH_JWKS_URL`) makes one, so a service without it never loads
 * them (docs/BENCHMARKS.md, "Footprint").
 */
let jwksRsa: Promise<typeof JwksRsa> | undefined;
const loadJwksRsa = () => (jwksRsa ??= import('jwks-rsa').then((module) => module.default));

export interface JwksCacheOptions {
  /** An OIDC discovery URL (`.../.well-known/openid-configuration`) or the JWKS URL itself. */
  url: string;
  /** With a discovery URL: the `issuer` its document must name (a mismatch is a setup error). */
  issuer?: string;
  /**
   * Least time between two fetches of the key set caused by tokens whose `kid` is not cached, so
   * tokens with forged `kid`s cannot make this process hammer the provider. @default 30_000
   */
  minRefetchIntervalMs?: number;
  /**
   * Age after which a cached key set is refetched in the background when a cached key is used (so
   * keys the provider withdrew stop being accepted); the cached keys keep serving meanwhile, and
   * for as long as the provider cannot be reached. @default 600_000
   */
  maxAgeMs?: number;
  /** Timeout of one request to the provider. @default 5_000 */
  timeoutMs?: number;
  /** Told of every failed fetch (the provider down, a bad document); the cache carries on. */
  onFetchError?: (error: Error) => void;
  /** The clock, in ms (tests). @default Date.now */
  now?: () => number;
}

/** A public key of the provider, with the algorithm its JWK pins (if it names one). */
export interface ProviderKey {
  key: KeyObject;
  alg?: string;
}

const DISCOVERY_PATH = /\/\.well-known\/(openid-configuration|oauth-authorization-server)$/;

/**
 * The identity provider's public keys by `kid`, fetched with `jwks-rsa`. Nothing is fetched until
 * the first token arrives, so the service starts while the provider is down. A `kid` not in the
 * cache triggers one fetch of the whole set, unless the last fetch was less than
 * `minRefetchIntervalMs` ago (then the token is refused without asking the provider); concurrent
 * lookups share one fetch. A failed fetch keeps the cached keys: they are served until a fetch
 * succeeds, however long the provider stays down. A successful fetch replaces the set, so a key
 * the provider removed is no longer accepted. The key set's URL is only ever the configured one:
 * no URL from a token (`jku`, `x5u`) or key embedded in one (`jwk`) is used.
 */
export class JwksCache {
  private keys = new Map<string, ProviderKey>();
  private client: JwksRsa.JwksClient | undefined;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private lastSuccessAt = Number.NEGATIVE_INFINITY;
  private inFlight: Promise<void> | undefined;
  private readonly minRefetchIntervalMs: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  /** Fetches of the key set started so far (successful or not). */
  fetchCount = 0;

  constructor(private readonly options: JwksCacheOptions) {
    this.minRefetchIntervalMs = options.minRefetchIntervalMs ?? 30_000;
    this.maxAgeMs = options.maxAgeMs ?? 600_000;
    this.now = options.now ?? Date.now;
    // In the background, after the start-up work, so the first provider token waits for the
    // provider's answer only. A failure is left to the first fetch, which reports it.
    setImmediate(() => {
      loadJwksRsa().catch(() => undefined);
    }).unref();
  }

  /**
   * The key for `kid`; undefined when the provider does not have it (or could not be asked). A
   * token without `kid` uses the provider's only key, when it has exactly one.
   */
  async key(kid: string | undefined): Promise<ProviderKey | undefined> {
    const cached = this.lookup(kid);
    if (cached) {
      // Stale: refresh in the background, spaced like any other fetch (the provider may be down).
      const now = this.now();
      if (
        now - this.lastSuccessAt > this.maxAgeMs &&
        now - this.lastAttemptAt >= this.minRefetchIntervalMs &&
        !this.inFlight
      ) {
        void this.refresh();
      }
      return cached;
    }
    if (this.inFlight) await this.inFlight;
    else if (this.now() - this.lastAttemptAt >= this.minRefetchIntervalMs) await this.refresh();
    return this.lookup(kid);
  }

  private lookup(kid: string | undefined): ProviderKey | undefined {
    if (kid !== undefined) return this.keys.get(kid);
    return this.keys.size === 1 ? this.keys.values().next().value : undefined;
  }

  /** Fetches the set once; never rejects (a failure is reported and the cache kept). */
  private refresh(): Promise<void> {
    this.lastAttemptAt = this.now();
    this.fetchCount += 1;
    this.inFlight = this.fetchKeys()
      .then((keys) => {
        this.keys = keys;
        this.lastSuccessAt = this.now();
      })
      .catch((error: Error) => this.options.onFetchError?.(error))
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  private async fetchKeys(): Promise<Map<string, ProviderKey>> {
    const { JwksClient } = await loadJwksRsa();
    this.client ??= new JwksClient({
      jwksUri: await this.jwksUri(),
      // This class caches and limits itself: jwks-rsa's per-kid cache would expire keys while
      // the provider is down, and its limiter counts requests rather than spacing them.
      cache: false,
      rateLimit: false,
      timeout: this.options.timeoutMs ?? 5_000,
    });
    const keys = new Map<string, ProviderKey>();
    for (const signing of await this.client.getSigningKeys()) {
      keys.set(signing.kid ?? '', {
        key: createPublicKey(signing.getPublicKey()),
        ...(signing.alg ? { alg: signing.alg } : {}),
      });
    }
    return keys;
  }

  /** The JWKS URL: the configured one, or the `jwks_uri` of the discovery document it names. */
  private async jwksUri(): Promise<string> {
    const { url, issuer } = this.options;
    if (!DISCOVERY_PATH.test(new URL(url).pathname)) return url;
    const response = await fetch(url, {
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5_000),
      headers: { accept: 'application/json' },
    });
    if (!response.ok) throw new Error(`discovery document ${url} answered ${response.status}`);
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (issuer !== undefined && document.issuer !== issuer) {
      throw new Error(
        `discovery document ${url} names issuer ${JSON.stringify(document.issuer)}, not AUTH_ISSUER ${JSON.stringify(issuer)}`,
      );
    }
    if (typeof document.jwks_uri !== 'string') {
      throw new Error(`discovery document ${url} has no jwks_uri`);
    }
    return document.jwks_uri;
  }
}

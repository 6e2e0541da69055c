import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';

/** A key of a key set file (`JWT_KEYS_FILE`, `{ "keys": [...] }`), as `pnpm keys:rotate` writes it. */
export interface KeySetEntry {
  kid: string;
  /** SPKI PEM. */
  publicKey: string;
  /** PKCS8 PEM; absent in a copy meant only for verifying. */
  privateKey?: string;
  /** From when it signs (ISO time); the newest active key is the current one. */
  activeFrom: string;
  /** Until when its tokens verify (ISO time); absent: as long as it is in the file. */
  verifyUntil?: string;
}

/** The entries of a key set document; throws naming the first thing that is wrong. */
export function readKeySetDocument(text: string): KeySetEntry[] {
  const document = JSON.parse(text) as { keys?: unknown };
  if (!Array.isArray(document.keys) || document.keys.length === 0)
    throw new Error('"keys" must be a non-empty array');
  return document.keys.map((value: unknown, i) => {
    const entry = value as Partial<Record<keyof KeySetEntry, unknown>>;
    const text = (name: keyof KeySetEntry, optional = false) => {
      const field = entry[name];
      if (field === undefined && optional) return undefined;
      if (typeof field !== 'string' || field === '')
        throw new Error(`keys[${i}].${name} must be a non-empty string`);
      if ((name === 'activeFrom' || name === 'verifyUntil') && Number.isNaN(Date.parse(field)))
        throw new Error(`keys[${i}].${name} must be an ISO time`);
      return field;
    };
    return {
      kid: text('kid')!,
      publicKey: text('publicKey')!,
      privateKey: text('privateKey', true),
      activeFrom: text('activeFrom')!,
      verifyUntil: text('verifyUntil', true),
    };
  });
}

/** RFC 7638 thumbprint of an RSA public key: the `kid` of a key that has no other name. */
export function keyId(publicKey: KeyObject): string {
  const { e, n } = publicKey.export({ format: 'jwk' });
  return createHash('sha256')
    .update(JSON.stringify({ e, kty: 'RSA', n }))
    .digest('base64url');
}

interface LoadedKey {
  kid: string;
  publicKey: KeyObject;
  privateKey?: KeyObject;
  activeFrom: number;
  verifyUntil: number;
}

function parse(text: string, path: string): LoadedKey[] {
  let entries: KeySetEntry[];
  try {
    entries = readKeySetDocument(text);
  } catch (error) {
    throw new Error(`JWT_KEYS_FILE ${path} is not a key set: ${(error as Error).message}`);
  }
  return entries.map((entry) => ({
    kid: entry.kid,
    publicKey: createPublicKey({ key: entry.publicKey, format: 'pem' }),
    privateKey: entry.privateKey
      ? createPrivateKey({ key: entry.privateKey, format: 'pem' })
      : undefined,
    activeFrom: Date.parse(entry.activeFrom),
    verifyUntil: entry.verifyUntil ? Date.parse(entry.verifyUntil) : Infinity,
  }));
}

/** The entry that signs at `now`: the newest whose `activeFrom` has come (else the oldest). */
export function currentEntry<T extends { activeFrom: number }>(keys: readonly T[], now: number): T {
  const sorted = [...keys].sort((a, b) => a.activeFrom - b.activeFrom);
  return sorted.filter((key) => key.activeFrom <= now).at(-1) ?? sorted[0]!;
}

export interface KeySetFileOptions {
  /** How often the file is checked for changes, in ms. @default 2000 */
  reloadMs?: number;
  /** Told when a changed file cannot be read (the keys read before stay in use). */
  onError?: (error: unknown) => void;
  /** The clock, in ms (tests). @default Date.now */
  now?: () => number;
}

/**
 * The service's keys from a key set file (`JWT_KEYS_FILE`), re-read whenever it changes, so a
 * `pnpm keys:rotate` reaches every process that reads the same file without a restart. The
 * current key (which signs) is the newest whose `activeFrom` has come: `keys:rotate` sets it a
 * little ahead, so every process knows a key before any process signs with it. Every key
 * verifies its tokens (by `kid`) until its `verifyUntil`. A `KeyPair` (structurally): the
 * fields answer for the current key at the time they are read.
 */
export class KeySetFile {
  private keys: LoadedKey[];
  private stamp: string;
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(
    private readonly path: string,
    private readonly options: KeySetFileOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.stamp = this.fileStamp();
    this.keys = parse(readFileSync(path, 'utf8'), path);
    this.timer = setInterval(() => this.reload(), options.reloadMs ?? 2000);
    this.timer.unref();
  }

  get publicKey(): KeyObject {
    return this.current().publicKey;
  }

  get privateKey(): KeyObject | undefined {
    return this.current().privateKey;
  }

  get kid(): string {
    return this.current().kid;
  }

  verificationKeys(): ReadonlyMap<string, KeyObject> {
    const now = this.now();
    return new Map(
      this.keys.filter((key) => key.verifyUntil > now).map((key) => [key.kid, key.publicKey]),
    );
  }

  close(): void {
    clearInterval(this.timer);
  }

  private current(): LoadedKey {
    return currentEntry(this.keys, this.now());
  }

  private fileStamp(): string {
    const stat = statSync(this.path);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  }

  private reload(): void {
    try {
      const stamp = this.fileStamp();
      if (stamp === this.stamp) return;
      this.keys = parse(readFileSync(this.path, 'utf8'), this.path);
      this.stamp = stamp;
    } catch (error) {
      this.options.onError?.(error);
    }
  }
}

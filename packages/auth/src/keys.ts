import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KeySetFile, keyId } from './key-set.js';

/**
 * The RS256 signing key (the private key only where tokens are signed), and with a key set the
 * other keys that verify: a key set file answers these for its current key when read.
 */
export interface KeyPair {
  publicKey: KeyObject;
  privateKey?: KeyObject;
  /** The signing key's id, which its tokens carry as `kid` (RFC 7638 thumbprint for a PEM pair). */
  readonly kid?: string;
  /** Public keys by `kid` that verify tokens (current, next, retired until their tokens expire). */
  verificationKeys?(): ReadonlyMap<string, KeyObject>;
  /** Stops watching the key set file (a PEM pair has nothing to stop). */
  close?(): void;
}

export const ALGORITHM = 'RS256';

const PRIVATE_FILE = 'jwt-private.pem';
const PUBLIC_FILE = 'jwt-public.pem';

/** Imports PEM keys (public SPKI, private PKCS8); throws a readable error for a bad PEM. */
export async function importKeys(pem: {
  publicKey: string;
  privateKey?: string;
}): Promise<KeyPair> {
  const publicKey = rsaKey('public', () => createPublicKey({ key: pem.publicKey, format: 'pem' }));
  const privateKey = pem.privateKey
    ? rsaKey('private', () => createPrivateKey({ key: pem.privateKey!, format: 'pem' }))
    : undefined;
  return Promise.resolve({ publicKey, privateKey, kid: keyId(publicKey) });
}

function rsaKey(kind: 'public' | 'private', load: () => KeyObject): KeyObject {
  const format = kind === 'public' ? 'SPKI' : 'PKCS8';
  let key: KeyObject;
  try {
    key = load();
  } catch (error) {
    throw new Error(`JWT ${kind} key is not an RSA ${format} PEM: ${(error as Error).message}`);
  }
  if (key.asymmetricKeyType !== 'rsa') {
    throw new Error(
      `JWT ${kind} key is not an RSA ${format} PEM: it is a ${key.asymmetricKeyType} key`,
    );
  }
  return key;
}

function generatePems(): { publicKey: string; privateKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}

/**
 * The all-in-one's development keys: generated once into `dataDir` (private key mode 0600) and
 * reused on every start, so tokens survive restarts. Split roles never use this; their replicas
 * must share configured keys.
 */
export async function loadOrCreateDevKeys(
  dataDir: string,
): Promise<{ publicKey: string; privateKey: string }> {
  const privatePath = join(dataDir, PRIVATE_FILE);
  const publicPath = join(dataDir, PUBLIC_FILE);
  if (existsSync(privatePath) && existsSync(publicPath)) {
    return {
      privateKey: readFileSync(privatePath, 'utf8'),
      publicKey: readFileSync(publicPath, 'utf8'),
    };
  }
  mkdirSync(dataDir, { recursive: true });
  const { privateKey, publicKey } = generatePems();
  writeFileSync(privatePath, privateKey, { mode: 0o600 });
  chmodSync(privatePath, 0o600);
  writeFileSync(publicPath, publicKey);
  return Promise.resolve({ privateKey, publicKey });
}

/** Where `pnpm keys:rotate` keeps the all-in-one's key set when no keys are configured. */
export function devKeySetPath(dataDir: string): string {
  return join(dataDir, 'jwt-keys.json');
}

/**
 * The keys a process uses: the key set file when `keysFile` is given (or, without configured
 * PEMs, when `keys:rotate` wrote one into `dataDir`); else configured PEMs when given;
 * otherwise, where `dataDir` is given (the all-in-one and `token:issue`), the development keys
 * in that directory, created on first use.
 */
export async function resolveKeys(options: {
  publicKeyPem?: string;
  privateKeyPem?: string;
  dataDir?: string;
  /** `JWT_KEYS_FILE`: a key set, re-read when it changes; wins over everything else. */
  keysFile?: string;
  onKeysFileError?: (error: unknown) => void;
}): Promise<KeyPair> {
  const keysFile =
    options.keysFile ??
    (options.dataDir && !options.publicKeyPem ? devKeySetPath(options.dataDir) : undefined);
  if (keysFile && (options.keysFile || existsSync(keysFile)))
    return new KeySetFile(keysFile, { onError: options.onKeysFileError });
  if (options.publicKeyPem) {
    return importKeys({ publicKey: options.publicKeyPem, privateKey: options.privateKeyPem });
  }
  if (options.privateKeyPem) throw new Error('JWT_PRIVATE_KEY is set without JWT_PUBLIC_KEY');
  if (!options.dataDir) throw new Error('no JWT keys configured');
  return importKeys(await loadOrCreateDevKeys(options.dataDir));
}

/** A key pair that lives only in this process (nothing it signs is accepted anywhere else). */
export async function throwawayKeys(): Promise<KeyPair> {
  return importKeys(generatePems());
}

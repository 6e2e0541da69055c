import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  exportPKCS8,
  exportSPKI,
  generateKeyPair,
  importPKCS8,
  importSPKI,
  type CryptoKey,
} from 'jose';

/** The RS256 key pair (the private key only where tokens are signed). */
export interface KeyPair {
  publicKey: CryptoKey;
  privateKey?: CryptoKey;
}

export const ALGORITHM = 'RS256';

const PRIVATE_FILE = 'jwt-private.pem';
const PUBLIC_FILE = 'jwt-public.pem';

/** Imports PEM keys (public SPKI, private PKCS8); throws a readable error for a bad PEM. */
export async function importKeys(pem: {
  publicKey: string;
  privateKey?: string;
}): Promise<KeyPair> {
  const publicKey = await importSPKI(pem.publicKey, ALGORITHM).catch((error: Error) => {
    throw new Error(`JWT public key is not an RSA SPKI PEM: ${error.message}`);
  });
  const privateKey = pem.privateKey
    ? await importPKCS8(pem.privateKey, ALGORITHM).catch((error: Error) => {
        throw new Error(`JWT private key is not an RSA PKCS8 PEM: ${error.message}`);
      })
    : undefined;
  return { publicKey, privateKey };
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
  const pair = await generateKeyPair(ALGORITHM, { modulusLength: 2048, extractable: true });
  const privateKey = await exportPKCS8(pair.privateKey);
  const publicKey = await exportSPKI(pair.publicKey);
  writeFileSync(privatePath, privateKey, { mode: 0o600 });
  chmodSync(privatePath, 0o600);
  writeFileSync(publicPath, publicKey);
  return { privateKey, publicKey };
}

/**
 * The keys a process uses: configured PEMs when given; otherwise, where `dataDir` is given (the
 * all-in-one and `token:issue`), the development keys in that directory, created on first use.
 */
export async function resolveKeys(options: {
  publicKeyPem?: string;
  privateKeyPem?: string;
  dataDir?: string;
}): Promise<KeyPair> {
  if (options.publicKeyPem) {
    return importKeys({ publicKey: options.publicKeyPem, privateKey: options.privateKeyPem });
  }
  if (options.privateKeyPem) throw new Error('JWT_PRIVATE_KEY is set without JWT_PUBLIC_KEY');
  if (!options.dataDir) throw new Error('no JWT keys configured');
  return importKeys(await loadOrCreateDevKeys(options.dataDir));
}

/** A key pair that lives only in this process (nothing it signs is accepted anywhere else). */
export async function throwawayKeys(): Promise<KeyPair> {
  const pair = await generateKeyPair(ALGORITHM, { modulusLength: 2048 });
  return { publicKey: pair.publicKey, privateKey: pair.privateKey };
}

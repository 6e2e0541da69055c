#!/usr/bin/env node
/**
 * Creates the RS256 key pair that every api and gateway replica shares, once.
 *
 *   node infra/generate-keys.mjs [--rotate] [PRIVATE_KEY_PATH PUBLIC_KEY_PATH]
 *
 * Paths default to `JWT_PRIVATE_KEY_FILE` and `JWT_PUBLIC_KEY_FILE`, the same variables the
 * services read, so the compose `keys` service and the replicas cannot disagree on them.
 *
 * Idempotent: an existing pair is kept (and checked to be a pair); a missing public key is
 * derived from an existing private key. A public key without its private key is an error
 * rather than a silent new pair, because replacing keys invalidates every access token.
 * `--rotate` replaces the pair on purpose. Files are written to a temporary name and renamed,
 * so a replica never reads half a key; the private key is mode 0600.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const args = process.argv.slice(2);
const rotate = args.includes('--rotate');
const paths = args.filter((a) => !a.startsWith('--'));
const privatePath = paths[0] ?? process.env.JWT_PRIVATE_KEY_FILE;
const publicPath = paths[1] ?? process.env.JWT_PUBLIC_KEY_FILE;

function fail(message) {
  process.stderr.write(`generate-keys: ${message}\n`);
  process.exit(1);
}

if (!privatePath || !publicPath) {
  fail(
    'give PRIVATE_KEY_PATH PUBLIC_KEY_PATH, or set JWT_PRIVATE_KEY_FILE and JWT_PUBLIC_KEY_FILE',
  );
}

function writeAtomically(path, contents, mode) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents, { mode });
  renameSync(temporary, path);
}

function publicPemOf(privateKey) {
  return createPublicKey(privateKey).export({ type: 'spki', format: 'pem' });
}

function fingerprint(publicPem) {
  const der = createPublicKey(publicPem).export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex').slice(0, 16);
}

const havePrivate = existsSync(privatePath);
const havePublic = existsSync(publicPath);

if (!rotate && havePrivate) {
  let derived;
  try {
    const key = createPrivateKey(readFileSync(privatePath, 'utf8'));
    if (key.asymmetricKeyType !== 'rsa') fail(`${privatePath} is not an RSA key`);
    derived = publicPemOf(key);
  } catch (error) {
    fail(`${privatePath} is not a readable PEM private key (${error.message})`);
  }
  if (!havePublic) {
    writeAtomically(publicPath, derived, 0o644);
    console.log(`generate-keys: derived ${publicPath} from the existing private key`);
  } else if (fingerprint(readFileSync(publicPath, 'utf8')) !== fingerprint(derived)) {
    fail(`${publicPath} does not belong to ${privatePath}; rotate with --rotate`);
  }
  console.log(`generate-keys: keeping the existing key pair (sha256 ${fingerprint(derived)})`);
  process.exit(0);
}

if (!rotate && havePublic) {
  fail(`${publicPath} exists but ${privatePath} does not; remove both or run with --rotate`);
}

const { publicKey, privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
// Private first: a reader that sees the new public key can always find its private key.
writeAtomically(privatePath, privateKey, 0o600);
writeAtomically(publicPath, publicKey, 0o644);
console.log(
  `generate-keys: ${rotate ? 'rotated to' : 'generated'} a new RS256 key pair ` +
    `(sha256 ${fingerprint(publicKey)}) at ${privatePath} and ${publicPath}`,
);

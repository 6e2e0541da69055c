import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { loadConfigOrExit } from '@agent-backend/config';
import {
  ACCESS_TOKEN_TTL_SECONDS,
  currentEntry,
  devKeySetPath,
  keyId,
  loadOrCreateDevKeys,
  readKeySetDocument,
  importKeys,
  type KeySetEntry,
} from '@agent-backend/auth';
import { AuditLog } from '@agent-backend/store';
import { withStore } from './cli-store.js';
import { KEY_ROTATED_BY_CLI, requestKeyRotated } from './control-socket.js';

/** Seconds between writing a new key and its first signature: every process re-reads in 2 s. */
const DEFAULT_ACTIVATE_IN_SECONDS = 30;
/** A retired key verifies this much beyond the lifetime of its last tokens (clock skew). */
const RETIRE_MARGIN_MS = 60_000;

/**
 * `pnpm keys:rotate [--activate-in <seconds>]`: adds a new RS256 key to the key set file
 * (`JWT_KEYS_FILE`, else `DATA_DIR/jwt-keys.json`), current from `--activate-in` seconds on
 * (default 30, so every process has re-read the file before any signs with it), and retires the
 * current key: it verifies until its last tokens expired (one access-token lifetime after the
 * switch), then the next rotation drops it. The first rotation seeds the file with the key pair
 * in use (`JWT_*_KEY` or the all-in-one's generated pair) under its thumbprint, which its
 * tokens already carry as `kid`. Prints `{ kid, activeFrom, retired, retiredVerifyUntil, file }`.
 * Records `key.rotated` in the audit log, reaching the store as `token:issue` does (where there
 * is one: the embedded engine's files are not created for it).
 */
async function main(): Promise<void> {
  const activateIn = activationDelay(process.argv.slice(2));
  const config = loadConfigOrExit('all-in-one');
  const file = config.JWT_KEYS_FILE ?? devKeySetPath(config.DATA_DIR);
  const now = Date.now();
  const keys = existsSync(file)
    ? readKeySetDocument(readFileSync(file, 'utf8'))
    : [await seedEntry(config)];

  const activeFrom = now + activateIn * 1000;
  const current = currentEntry(
    keys.map((key) => ({ key, activeFrom: Date.parse(key.activeFrom) })),
    now,
  ).key;
  const retiredVerifyUntil = new Date(
    activeFrom + ACCESS_TOKEN_TTL_SECONDS * 1000 + RETIRE_MARGIN_MS,
  ).toISOString();
  // Every key there stops signing when the new one starts (a key announced by a rotation moments
  // ago too), so each verifies until its tokens expired; keys past that are dropped.
  const kept = keys
    .filter((key) => !key.verifyUntil || Date.parse(key.verifyUntil) > now)
    .map((key) => ({ ...key, verifyUntil: key.verifyUntil ?? retiredVerifyUntil }));
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const added: KeySetEntry = {
    kid: keyId((await importKeys(pair)).publicKey),
    publicKey: pair.publicKey,
    privateKey: pair.privateKey,
    activeFrom: new Date(activeFrom).toISOString(),
  };
  // Atomically: a process re-reading the file never sees half of it.
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ keys: [...kept, added] }, null, 2)}\n`, {
    mode: 0o600,
  });
  renameSync(temporary, file);
  const rotated = { kid: added.kid, retired: current.kid, active_from: added.activeFrom };
  await withStore(
    config,
    () => requestKeyRotated(config.DATA_DIR, rotated),
    (db) => new AuditLog(db).record(KEY_ROTATED_BY_CLI(rotated)),
    // No database yet (never started on the embedded engine): nothing to record into.
    () => undefined,
  ).catch((error: Error) =>
    // The key set is written: the rotation stands, only its record is missing.
    process.stderr.write(`keys:rotate: the audit event was not recorded: ${error.message}\n`),
  );
  process.stdout.write(
    `${JSON.stringify({
      kid: added.kid,
      activeFrom: added.activeFrom,
      retired: current.kid,
      retiredVerifyUntil,
      file,
    })}\n`,
  );
}

/** The key pair in use before the first rotation, as a key set entry current since ever. */
async function seedEntry(config: ReturnType<typeof loadConfigOrExit>): Promise<KeySetEntry> {
  const pem =
    config.jwtPublicKeyPem && config.jwtPrivateKeyPem
      ? { publicKey: config.jwtPublicKeyPem, privateKey: config.jwtPrivateKeyPem }
      : await loadOrCreateDevKeys(config.DATA_DIR);
  const { publicKey } = await importKeys(pem);
  return {
    kid: keyId(publicKey),
    publicKey: pem.publicKey,
    privateKey: pem.privateKey,
    activeFrom: new Date(0).toISOString(),
  };
}

function activationDelay(args: string[]): number {
  if (args.length === 0) return DEFAULT_ACTIVATE_IN_SECONDS;
  const seconds = Number(args[1]);
  if (
    args[0] !== '--activate-in' ||
    args.length !== 2 ||
    !Number.isInteger(seconds) ||
    seconds < 0
  ) {
    process.stderr.write('usage: pnpm keys:rotate [--activate-in <seconds>]   (default 30)\n');
    process.exit(2);
  }
  return seconds;
}

main().catch((error: Error) => {
  process.stderr.write(`keys:rotate failed: ${error.message}\n`);
  process.exit(1);
});

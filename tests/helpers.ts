import { createHmac, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { Redis } from 'ioredis';
import { REPO_ROOT, testRedisUrl } from '@agent-backend/testing';

/** Integration tests run the built entry points; `npm test` builds before running vitest. */
export function requireBuild(...entries: string[]): void {
  for (const entry of entries) {
    if (!existsSync(join(REPO_ROOT, entry))) {
      throw new Error(
        `${entry} is not built: run the tests with \`npm test\` (it builds first) or \`pnpm build\``,
      );
    }
  }
}

export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `${label}-`));
}

/** A fresh RS256 key pair written to files, as an operator would mount them. */
export function keyFiles(): {
  publicKey: string;
  privateKey: string;
  publicKeyFile: string;
  privateKeyFile: string;
} {
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const dir = tempDir('keys');
  const publicKeyFile = join(dir, 'public.pem');
  const privateKeyFile = join(dir, 'private.pem');
  writeFileSync(publicKeyFile, pair.publicKey);
  writeFileSync(privateKeyFile, pair.privateKey, { mode: 0o600 });
  return { ...pair, publicKeyFile, privateKeyFile };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Tokens an attacker or a broken client might send, each of which must get 401. */
export function badTokens(keys: {
  publicKey: string;
  privateKey: string;
}): Promise<Record<string, string>> {
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: object) => jwt.sign(claims, keys.privateKey, { algorithm: 'RS256' });
  const expired = sign({ sub: 'user-1', iat: now - 7200, exp: now - 3600 });
  const noExp = sign({ sub: 'user-1' });
  const hsInput = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'user-1', exp: now + 600 })}`;
  return Promise.resolve({
    expired,
    'without exp': noExp,
    malformed: 'not-a-jwt',
    'unsigned (alg none)': `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'user-1', exp: now + 600 })}.`,
    'HS256 signed with the public key': `${hsInput}.${createHmac('sha256', keys.publicKey).update(hsInput).digest('base64url')}`,
  });
}

export async function json(res: Response): Promise<{ status: number; body: unknown }> {
  return { status: res.status, body: await res.json() };
}

export function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/**
 * `NODE_OPTIONS` with a module hook that refuses `names` to `import` and `require` alike: a
 * package or any subpath of it, by the specifier, or by the file it resolves to (so
 * `bullmq/dist/cjs/postgres` also refuses BullMQ's own `require('./postgres')`). Each refusal
 * writes `loaded <specifier>` to stderr and throws: a static import fails the process, a
 * background `import()` that swallows its error is still reported. `internals` are Node's own
 * bundled dependencies (`internal/deps/<name>`, such as undici behind `fetch`), which no module
 * hook sees: a check every 10 ms writes `loaded <name>` to stderr once one is loaded (the
 * process goes on).
 */
export function refusingModules(
  names: readonly string[],
  internals: readonly string[] = [],
): string {
  const hook = `import { registerHooks } from 'node:module';
const refused = ${JSON.stringify(names)};
const refuse = (what) => {
  process.stderr.write('loaded ' + what + '\\n');
  throw new Error('loaded ' + what);
};
registerHooks({
  resolve(specifier, context, next) {
    if (refused.some((name) => specifier === name || specifier.startsWith(name + '/')))
      refuse(specifier);
    const resolved = next(specifier, context);
    const file = refused.find((name) => resolved.url.includes('/node_modules/' + name + '/'));
    if (file !== undefined) refuse(file + ' (' + specifier + ')');
    return resolved;
  },
});
const internals = ${JSON.stringify(internals)};
if (internals.length > 0) {
  const timer = setInterval(() => {
    const loaded = internals.find((name) =>
      process.moduleLoadList.some((m) => m.startsWith('NativeModule internal/deps/' + name + '/')),
    );
    if (loaded === undefined) return;
    process.stderr.write('loaded ' + loaded + ' (bundled with Node)\\n');
    clearInterval(timer);
  }, 10);
  timer.unref();
}`;
  return `--import=data:text/javascript,${encodeURIComponent(hook)}`;
}

/** Deletes the test Redis's keys under `prefix` (a service process's `REDIS_KEY_PREFIX`). */
export async function deletePrefixedKeys(prefix: string): Promise<void> {
  const redis = new Redis(testRedisUrl());
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

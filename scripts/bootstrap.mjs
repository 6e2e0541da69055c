#!/usr/bin/env node
// The one entry behind the README commands and the root scripts: installs what is missing
// (pnpm, dependencies, the build), then runs the command. Needs only Node.js >= 20.19.
// Everything it prints itself goes to stderr, so `token:issue` keeps a clean stdout.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);
const say = (message) => process.stderr.write(`[bootstrap] ${message}\n`);

const ENTRIES = {
  start: 'apps/all-in-one/dist/main.js',
  'start:api': 'apps/api/dist/main.js',
  'start:gateway': 'apps/gateway/dist/main.js',
  'start:worker': 'apps/worker/dist/main.js',
  'token:issue': 'apps/all-in-one/dist/token-issue.js',
  'token:revoke': 'apps/all-in-one/dist/token-revoke.js',
  'keys:rotate': 'apps/all-in-one/dist/keys-rotate.js',
  demo: 'apps/all-in-one/dist/demo.js',
  'node:simulate': 'packages/node-client/dist/simulate-node.js',
};

const [command = 'setup', ...args] = process.argv.slice(2);

function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    say(`Node.js >= 20.19 is required; this is ${process.version}`);
    process.exit(1);
  }
}

/** pnpm from PATH when it is the pinned major, else the pinned version through npx. */
function pnpmCommand() {
  const pinned = JSON.parse(readFileSync('package.json', 'utf8')).packageManager.split('@')[1];
  const found = spawnSync('pnpm', ['--version'], { encoding: 'utf8', shell: false });
  if (found.status === 0 && found.stdout.trim().split('.')[0] === pinned.split('.')[0])
    return ['pnpm'];
  return ['npx', '--yes', `pnpm@${pinned}`];
}

function run(argv, options = {}) {
  const result = spawnSync(argv[0], argv.slice(1), { stdio: ['inherit', 2, 2], ...options });
  if (result.status !== 0) {
    say(`failed: ${argv.join(' ')}`);
    process.exit(result.status ?? 1);
  }
}

/** A fingerprint of everything that decides what `pnpm install` produces. */
function installFingerprint() {
  const hash = createHash('sha256');
  for (const file of ['pnpm-lock.yaml', 'pnpm-workspace.yaml', 'package.json'])
    hash.update(readFileSync(file));
  for (const top of ['apps', 'packages']) {
    for (const name of readdirSync(top).sort()) {
      const manifest = join(top, name, 'package.json');
      if (existsSync(manifest)) hash.update(readFileSync(manifest));
    }
  }
  return hash.digest('hex');
}

function ensureInstalled() {
  const stamp = join('node_modules', '.bootstrap-install');
  const fingerprint = installFingerprint();
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === fingerprint) return;
  say('installing dependencies (pnpm install --frozen-lockfile)');
  run([...pnpmCommand(), 'install', '--frozen-lockfile'], {
    env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0' },
  });
  writeFileSync(stamp, fingerprint);
}

function ensureBuilt() {
  // tsc -b is incremental: a no-op build when nothing changed.
  run([process.execPath, 'node_modules/typescript/bin/tsc', '-b', 'tsconfig.build.json']);
}

/** Resolves when something accepts TCP connections on host:port within the timeout. */
function reachable(port, host = '127.0.0.1', timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Tests need a real Redis and PostgreSQL. Explicit REDIS_URL / DATABASE_URL win; otherwise local
 * servers on the default ports are used (database `test`, user `postgres`, trust auth, as on CI);
 * otherwise the test setup starts containers with testcontainers (needs a Docker engine).
 */
async function testServices() {
  const env = { ...process.env };
  if (!env.REDIS_URL && (await reachable(6379))) env.REDIS_URL = 'redis://127.0.0.1:6379';
  if (!env.DATABASE_URL && (await reachable(5432)))
    env.DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
  say(
    `tests use Redis ${env.REDIS_URL ?? '(testcontainers)'} and PostgreSQL ${env.DATABASE_URL ?? '(testcontainers)'}`,
  );
  return env;
}

/** Runs a long-lived child with our stdio, forwarding termination signals, and exits with it. */
function handOver(argv, env = process.env) {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
    process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}

/**
 * The service commands read settings from `.env` at the repository root when there is one
 * (git-ignored; `.env.example` lists the usual ones). A variable already in the environment
 * wins over the file. Tests never read it: they set what they need.
 */
function loadDotEnv() {
  if (!existsSync('.env')) return;
  process.loadEnvFile('.env');
  say('settings from .env loaded (the environment wins over it)');
}
if (command in ENTRIES) loadDotEnv();

checkNode();
ensureInstalled();
if (command === 'setup') {
  ensureBuilt();
  say('ready');
} else if (command in ENTRIES) {
  ensureBuilt();
  handOver([process.execPath, ENTRIES[command], ...args]);
} else if (command === 'test') {
  ensureBuilt();
  handOver(
    [process.execPath, 'node_modules/vitest/vitest.mjs', 'run', ...args],
    await testServices(),
  );
} else if (command === 'test:faults') {
  // The fault-injection suite (tests/faults, docs/RELIABILITY.md): its own vitest config, so
  // `npm test` does not run it; FAULTS_PROFILE=long for the longer profile.
  ensureBuilt();
  handOver(
    [
      process.execPath,
      'node_modules/vitest/vitest.mjs',
      'run',
      '--config',
      'vitest.faults.config.ts',
      ...args,
    ],
    await testServices(),
  );
} else if (command === 'bench') {
  ensureBuilt();
  const files =
    args.length > 0
      ? args
      : readdirSync('bench')
          .filter((f) => f.endsWith('.ts'))
          .map((f) => join('bench', f));
  for (const file of files)
    run([process.execPath, '--import', 'tsx', file], {
      stdio: 'inherit',
      env: await testServices(),
    });
} else {
  say(
    `unknown command ${command}; use one of setup, test, test:faults, bench, ${Object.keys(ENTRIES).join(', ')}`,
  );
  process.exit(2);
}

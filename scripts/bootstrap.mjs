#!/usr/bin/env node
// The one entry behind the README commands and the root scripts: installs what is missing
// (pnpm, dependencies, the build), then runs the command. Needs only Node.js >= 22.
// Everything it prints itself goes to stderr, so `token:issue` keeps a clean stdout: one line
// per setup step with its time (install, build; the service prints its migrations' own).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_ENV, serviceNodeFlags } from './service-defaults.mjs';

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
  migrate: 'apps/all-in-one/dist/migrate.js',
  demo: 'apps/all-in-one/dist/demo.js',
  'node:simulate': 'packages/node-client/dist/simulate-node.js',
};

const [command = 'setup', ...args] = process.argv.slice(2);

/** package.json `engines`: Node 20 reached end of life on 2026-04-30. */
const NODE_MAJOR_MIN = 22;

function checkNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < NODE_MAJOR_MIN) {
    say(
      `Node.js >= ${NODE_MAJOR_MIN} is required (22 or 24 LTS); this is ${process.version}. ` +
        'Install a current LTS from https://nodejs.org/ and run the command again.',
    );
    process.exit(1);
  }
}

/**
 * Runs one setup step and prints it as one line with its time: the step's name first (so a
 * long step does not look hung), then its outcome. `fn` returns a note for the line.
 */
async function step(name, fn) {
  process.stderr.write(`[bootstrap] ${name} ... `);
  const started = performance.now();
  let note;
  try {
    note = await fn();
  } catch (error) {
    process.stderr.write('failed\n');
    throw error;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(`${seconds} s${note ? ` (${note})` : ''}\n`);
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

/**
 * Runs a setup command with its output held back, so the step keeps its one line: the output
 * is printed when the command fails, or when it warned (a warning should not go unseen).
 */
function runQuiet(argv, options = {}) {
  const result = spawnSync(argv[0], argv.slice(1), {
    stdio: ['inherit', 'pipe', 'pipe'],
    encoding: 'utf8',
    ...options,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.status !== 0) {
    process.stderr.write(`failed\n${output}`);
    say(`failed: ${argv.join(' ')}`);
    process.exit(result.status ?? 1);
  }
  if (/\bWARN\b|npm warn/i.test(output)) process.stderr.write(`\n${output}`);
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

async function ensureInstalled() {
  const stamp = join('node_modules', '.bootstrap-install');
  const fingerprint = installFingerprint();
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === fingerprint) return;
  await step('install: pnpm install --frozen-lockfile', () => {
    runQuiet([...pnpmCommand(), 'install', '--frozen-lockfile'], {
      env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0' },
    });
    writeFileSync(stamp, fingerprint);
  });
}

/**
 * Transpiles the workspace with esbuild (scripts/build.mjs): seconds, where tsc -b took two
 * minutes on a fresh clone. Types are checked by `pnpm typecheck`, not here.
 */
async function ensureBuilt() {
  const { build } = await import('./build.mjs');
  try {
    await step('build: esbuild src/ to dist/', async () => {
      const { files, written } = await build(root);
      return written === 0 ? `${files} files, up to date` : `${written} of ${files} files written`;
    });
  } catch (error) {
    // esbuild's message lists each syntax error with its file and line.
    say(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
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

/** The commands that start a long-lived service (not the one-shot ones like token:issue). */
const SERVICES = new Set(['start', 'start:api', 'start:gateway', 'start:worker', 'demo']);

/** Node flags of a service (scripts/service-defaults.mjs); none for a one-shot command. */
function serviceFlags(name) {
  return SERVICES.has(name) ? serviceNodeFlags(process.env.NODE_OPTIONS) : [];
}

/** A service's environment: the defaults of scripts/service-defaults.mjs under ours. */
function serviceEnv(name) {
  return SERVICES.has(name) ? { ...SERVICE_ENV, ...process.env } : process.env;
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
await ensureInstalled();
if (command === 'setup') {
  await ensureBuilt();
  say('ready');
} else if (command in ENTRIES) {
  await ensureBuilt();
  handOver(
    [process.execPath, ...serviceFlags(command), ENTRIES[command], ...args],
    serviceEnv(command),
  );
} else if (command === 'test') {
  await ensureBuilt();
  handOver(
    [process.execPath, 'node_modules/vitest/vitest.mjs', 'run', ...args],
    await testServices(),
  );
} else if (command === 'test:faults') {
  // The fault-injection suite (tests/faults, docs/RELIABILITY.md): its own vitest config, so
  // `npm test` does not run it; FAULTS_PROFILE=long for the longer profile.
  await ensureBuilt();
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
  await ensureBuilt();
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

/**
 * The service commands read `.env` at the repository root, and a variable already in
 * the environment wins over it. scripts/bootstrap.mjs runs from a scratch root whose other
 * entries link to this checkout, so the test's `.env` is not the repository's.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

/** Entries of the checkout the scratch root does not link: its own settings and data. */
const OWN = new Set(['.env', '.data', '.git', 'scripts']);

/** A root whose entries link to this checkout's, but with its own copy of the bootstrap. */
function scratchRoot(): string {
  const root = tempDir('dotenv-root');
  for (const entry of readdirSync(REPO_ROOT)) {
    if (!OWN.has(entry)) symlinkSync(join(REPO_ROOT, entry), join(root, entry));
  }
  // The bootstrap finds the root from its own path, so it is a copy; its neighbours are links.
  mkdirSync(join(root, 'scripts'));
  for (const entry of readdirSync(join(REPO_ROOT, 'scripts'))) {
    const from = join(REPO_ROOT, 'scripts', entry);
    if (entry === 'bootstrap.mjs') copyFileSync(from, join(root, 'scripts', entry));
    else symlinkSync(from, join(root, 'scripts', entry));
  }
  return root;
}

/** `node scripts/bootstrap.mjs <args>` in `root`, with only PATH and HOME besides `env`. */
function bootstrap(
  root: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts/bootstrap.mjs'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

describe('.env', () => {
  it('token:issue takes DATA_DIR from .env, and from the environment when both set it', async () => {
    requireBuild('apps/all-in-one/dist/token-issue.js');
    const root = scratchRoot();
    const fromFile = tempDir('dotenv-file');
    const fromEnv = tempDir('dotenv-env');
    writeFileSync(join(root, '.env'), `# a comment\nDATA_DIR=${fromFile}\n`);

    const first = await bootstrap(root, ['token:issue', 'bob']);
    expect(first.code, first.stderr).toBe(0);
    expect(Object.keys(JSON.parse(first.stdout) as object).sort()).toEqual([
      'accessToken',
      'refreshToken',
    ]);
    expect(existsSync(join(fromFile, 'pglite'))).toBe(true);

    const second = await bootstrap(root, ['token:issue', 'bob'], { DATA_DIR: fromEnv });
    expect(second.code, second.stderr).toBe(0);
    expect(existsSync(join(fromEnv, 'pglite'))).toBe(true);
    // Nothing went to the default ./.data of that root.
    expect(existsSync(join(root, '.data'))).toBe(false);
  }, 120_000);
});

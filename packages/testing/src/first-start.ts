import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { exited } from './service-process.js';

export interface FirstStartOptions {
  /** The repository to clone (its committed HEAD, as a newcomer's `git clone` gets it). */
  readonly repo: string;
  /** Give up (and report) when `/healthz` has not answered by then. */
  readonly deadlineMs: number;
  /** Extra environment for `npm start` (the clone's own `DATA_DIR` and `PORT` are set). */
  readonly env?: Record<string, string>;
}

export interface FirstStart {
  /** From spawning `npm start` to the first 200 from `/healthz`; undefined past the deadline. */
  readonly healthyMs: number | undefined;
  /** What `npm start` printed until then: bootstrap's step lines (stderr), the log (stdout). */
  readonly stdout: string[];
  readonly stderr: string[];
}

/** A free TCP port on loopback, from the kernel (bound to 0, read, released). */
async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * A newcomer's first start, timed: `git clone` of the repository into a temporary folder, then
 * `npm start` there (install from the pnpm store, build, create the database, migrate) with an
 * empty `DATA_DIR`, until `/healthz` answers. Node is the one running this (first on PATH), and
 * the embedded engines are used (no REDIS_URL or DATABASE_URL). The process group is stopped
 * before returning.
 */
export async function timeFirstStart(options: FirstStartOptions): Promise<FirstStart> {
  const clone = join(mkdtempSync(join(tmpdir(), 'first-start-')), 'repo');
  execFileSync('git', ['clone', '--quiet', options.repo, clone]);
  const port = await freePort();
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(REDIS_URL|DATABASE_URL|npm_|NODE_OPTIONS|VITEST)/.test(key))
      env[key] = value;
  }
  Object.assign(env, {
    PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
    DATA_DIR: mkdtempSync(join(tmpdir(), 'first-start-data-')),
    PORT: String(port),
    HOST: '127.0.0.1',
    ...options.env,
  });
  const started = performance.now();
  // Its own process group, so npm, bootstrap and the service stop together.
  const child = spawn('npm', ['start'], {
    cwd: clone,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const collect = (sink: string[]) => {
    let partial = '';
    return (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      sink.push(...parts);
    };
  };
  child.stdout.on('data', collect(stdout));
  child.stderr.on('data', collect(stderr));
  const ended = exited(child);
  let healthyMs: number | undefined;
  try {
    while (performance.now() - started < options.deadlineMs && child.exitCode === null) {
      const healthy = await fetch(`http://127.0.0.1:${port}/healthz`, {
        signal: AbortSignal.timeout(1_000),
      }).then(
        (response) => response.ok,
        () => false,
      );
      if (healthy) {
        healthyMs = performance.now() - started;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 10_000);
    await ended;
    clearTimeout(timer);
  }
  return { healthyMs, stdout, stderr };
}

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root, so tests can find built entry points wherever vitest runs from. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Every stdout line so far (JSON log lines), and stderr. */
  readonly stdout: string[];
  readonly stderr: string[];
  /** Sends `signal` and resolves with the exit code (or the signal name) once the process ended. */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface StartServiceProcessOptions {
  /** Built entry relative to the repo root, e.g. `apps/api/dist/main.js`. */
  entry: string;
  /** Arguments after the entry, e.g. `['start:gateway']` for `scripts/bootstrap.mjs`. */
  args?: readonly string[];
  /** Added to a minimal environment (PATH, HOME); PORT defaults to 0 (any free port). */
  env?: Record<string, string | undefined>;
  /** How long to wait for the `listening` log line. @default 60_000 (PGlite compiles WebAssembly at start; slow on a loaded machine) */
  timeoutMs?: number;
}

/** Resolves when the process exits, with its code or signal. */
export function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
}

/** Every per-user limit turned off (`0`), for services a test starts. */
export const LIMITS_OFF: Readonly<Record<string, string>> = Object.freeze({
  RATE_LIMIT_INVOKE_PER_MINUTE: '0',
  RATE_LIMIT_DECISIONS_PER_MINUTE: '0',
  RATE_LIMIT_KNOWLEDGE_UPLOAD_PER_MINUTE: '0',
  RATE_LIMIT_KNOWLEDGE_SEARCH_PER_MINUTE: '0',
  RATE_LIMIT_MCP_VALIDATE_PER_MINUTE: '0',
  RATE_LIMIT_WRITES_PER_MINUTE: '0',
  RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE: '0',
  RATE_LIMIT_REFRESH_PER_MINUTE: '0',
  RATE_LIMIT_WEBHOOK_PER_MINUTE: '0',
  MAX_CONCURRENT_RUNS_PER_USER: '0',
  MAX_OPEN_STREAMS_PER_USER: '0',
  MAX_NODE_CONNECTIONS_PER_USER: '0',
  MAX_WEB_CONNECTIONS_PER_USER: '0',
  CHAT_MESSAGES_PER_CHAT_PER_MINUTE: '0',
  CHAT_MESSAGES_PER_PLATFORM_PER_MINUTE: '0',
  GATEWAY_FRAMES_PER_SECOND: '0',
  GATEWAY_BYTES_PER_SECOND: '0',
});

/**
 * Starts a built service entry as a real process with the test's environment and waits for its
 * `listening` log line to learn the port. The process gets only the variables given (plus PATH
 * and HOME), so a developer's shell cannot change what a test sees.
 */
export async function startServiceProcess(
  options: StartServiceProcessOptions,
): Promise<ServiceProcess> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    PORT: '0',
    HOST: '127.0.0.1',
    // Tests of other things run many requests as one user: the per-user limits (docs/limits.md)
    // are off unless a test sets them.
    ...LIMITS_OFF,
  };
  for (const [key, value] of Object.entries(options.env ?? {}))
    if (value !== undefined) env[key] = value;
  const child = spawn(process.execPath, [options.entry, ...(options.args ?? [])], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const lines = (sink: string[]) => {
    let partial = '';
    return (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8');
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      sink.push(...parts.filter(Boolean));
    };
  };
  child.stdout!.on('data', lines(stdout));
  child.stderr!.on('data', lines(stderr));

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${options.entry} did not start within ${options.timeoutMs ?? 60_000} ms:\n${[...stdout, ...stderr].join('\n')}`,
        ),
      );
    }, options.timeoutMs ?? 60_000);
    const check = setInterval(() => {
      for (const line of stdout) {
        if (!line.includes('"listening"')) continue;
        const parsed = JSON.parse(line) as { port?: number };
        if (parsed.port) {
          clearInterval(check);
          clearTimeout(timer);
          resolve(parsed.port);
          return;
        }
      }
    }, 20);
    child.once('exit', (code) => {
      clearInterval(check);
      clearTimeout(timer);
      reject(
        new Error(
          `${options.entry} exited with ${code} before listening:\n${[...stdout, ...stderr].join('\n')}`,
        ),
      );
    });
  });

  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    stdout,
    stderr,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited(child);
    },
  };
}

/** Runs a built CLI entry to completion and returns its output. */
export function runEntry(
  entry: string,
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
  };
  for (const [key, value] of Object.entries(env)) if (value !== undefined) fullEnv[key] = value;
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: REPO_ROOT,
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

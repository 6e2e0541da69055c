import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { tmpdir } from 'node:os';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { mcpSdk } from './mcp-sdk.js';

/** `child_process.spawn` with an argument array; injectable so tests can count spawns. */
export type SpawnFn = (
  command: string,
  args: readonly string[],
  options: SpawnOptions,
) => ChildProcess;

export interface StdioTransportOptions {
  /** Command and arguments, already vetted by the stdio policy. */
  argv: readonly string[];
  /** @default child_process.spawn */
  spawn?: SpawnFn;
  /** How long `close` waits after closing stdin before SIGTERM. @default 100 */
  exitGraceMs?: number;
  /** How long `close` waits after SIGTERM before SIGKILL. @default 2000 */
  killGraceMs?: number;
}

/**
 * The environment a stdio server gets: `PATH` (so the allowlisted command and what it runs can be
 * found) and `HOME` (many runtimes need one for caches). Nothing else from the service's own
 * environment, which holds database URLs, JWT keys and API keys.
 */
export function minimalEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of ['PATH', 'HOME'] as const) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

const STDERR_TAIL = 2048;

/**
 * An MCP client transport over a child process's stdin/stdout, written for untrusted input where
 * the SDK's `StdioClientTransport` is written for a trusted desktop: no shell (`shell: false`,
 * argument array), a minimal environment, the working directory set to the OS temp directory
 * (not the service's, where `.data` lives), its own process group so `close` ends the whole tree
 * (SIGTERM, then SIGKILL), and a record of how the process ended for error messages.
 */
export class StdioProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** How the process ended, once it has. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** The last bytes the process wrote to stderr (for the operator's log, not for users). */
  stderrTail = '';
  /** True when stdout carried a line that is not JSON-RPC (a server that logs to stdout). */
  invalidOutput = false;

  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;
  readonly #buffer = new (mcpSdk().ReadBuffer)();

  constructor(private readonly options: StdioTransportOptions) {}

  start(): Promise<void> {
    const [command, ...args] = this.options.argv;
    if (!command) return Promise.reject(new Error('empty command'));
    const child = (this.options.spawn ?? nodeSpawn)(command, args, {
      env: minimalEnvironment(),
      cwd: tmpdir(),
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    this.#child = child;
    this.#exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve();
      }),
    );
    child.once('close', () => {
      if (this.#child === child) this.#child = undefined;
      this.onclose?.();
    });
    child.stdout!.on('data', (chunk: Buffer) => this.#read(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.stdin!.on('error', (error) => this.onerror?.(error));
    return new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (error) => {
        if (child.pid === undefined) this.#child = undefined; // never started: nothing to close
        this.onerror?.(error);
        reject(error);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin?.writable) return Promise.reject(new Error('the stdio process is not running'));
    return new Promise((resolve, reject) =>
      stdin.write(mcpSdk().serializeMessage(message), (error) =>
        error ? reject(error) : resolve(),
      ),
    );
  }

  /** Ends the process and every process it started; resolves once it has exited. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || this.exit) return;
    child.stdin?.end();
    const exited = this.#exited!;
    const wait = (ms: number) =>
      Promise.race([exited.then(() => true), delay(ms).then(() => false)]);
    if (!(await wait(this.options.exitGraceMs ?? 100))) {
      killGroup(child, 'SIGTERM');
      if (!(await wait(this.options.killGraceMs ?? 2_000))) killGroup(child, 'SIGKILL');
      await wait(this.options.killGraceMs ?? 2_000);
    }
    // Whatever the server started and left behind in its group goes too.
    killGroup(child, 'SIGKILL');
  }

  #read(chunk: Buffer): void {
    try {
      this.#buffer.append(chunk);
    } catch (error) {
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        this.invalidOutput = true;
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (process.platform !== 'win32' && child.pid !== undefined) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

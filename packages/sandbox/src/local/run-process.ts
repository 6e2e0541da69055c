import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { CappedOutput } from '../capped-output.js';
import type { ExecOptions } from '../sandbox.js';

/** What a finished (or killed) process produced. */
export interface ProcessOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly truncated: boolean;
}

/** What {@link runProcess} starts a process with, besides the call's limits. */
export interface RunProcessOptions extends ExecOptions {
  readonly onSpawn?: (pid: number) => void;
  /**
   * Descriptors the process gets from 3 on, in order: an open descriptor of ours is passed as
   * is; a buffer becomes a pipe the process reads it from (written, then closed).
   */
  readonly fds?: ReadonlyArray<number | Buffer>;
}

/**
 * Runs `command` and waits for it, killing it (SIGKILL, its whole process group) at the
 * deadline or when `signal` aborts. Never rejects for the process's own failure: a deadline is
 * `timedOut`, a signal death `exitCode: null`. Rejects only when it cannot start.
 */
export function runProcess(
  command: string,
  args: readonly string[],
  options: RunProcessOptions,
): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const extra = options.fds ?? [];
    const child = spawn(command, args, {
      stdio: [
        'ignore',
        'pipe',
        'pipe',
        ...extra.map((fd) => (typeof fd === 'number' ? fd : 'pipe')),
      ],
      detached: true,
      env: {},
    });
    extra.forEach((fd, index) => {
      if (typeof fd === 'number') return;
      const pipe = child.stdio[3 + index] as Writable | null;
      // A process that exits before reading all of it closes the pipe: not our error.
      pipe?.on('error', () => undefined);
      pipe?.end(fd);
    });
    const stdout = new CappedOutput(options.maxOutputBytes);
    const stderr = new CappedOutput(options.maxOutputBytes);
    let timedOut = false;
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    const onAbort = () => kill();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('spawn', () => {
      if (child.pid !== undefined) options.onSpawn?.(child.pid);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({
        stdout: stdout.text(),
        stderr: stderr.text(),
        exitCode: timedOut || code === null ? null : code,
        timedOut,
        truncated: stdout.cut || stderr.cut,
      });
    });
  });
}

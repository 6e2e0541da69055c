import type { CommandExitError, CommandResult, Sandbox } from 'e2b';
import { CappedOutput } from '../capped-output.js';
import { SandboxError, type ExecOptions, type ExecResult } from '../sandbox.js';
import { isE2bError, providerCall, providerError } from './e2b-sdk.js';

/** The working directory of E2B's templates (the `user` user's home). */
export const E2B_WORKDIR = '/home/user';
/**
 * The SDK keeps all of a command's output in memory; a call that prints more than this in all is
 * stopped (its first `maxOutputBytes` are kept, as always), so one call cannot fill the service's
 * memory.
 */
export const E2B_MAX_STREAMED_BYTES = 16 * 1024 * 1024;

/**
 * Runs `bash -c command` in the workdir with the call's deadline: at the deadline, on abort, or
 * once it printed {@link E2B_MAX_STREAMED_BYTES}, the process is killed in the sandbox (E2B
 * would otherwise leave it running after the stream ends).
 */
export async function runCommand(
  sandbox: Sandbox,
  command: string,
  options: ExecOptions,
): Promise<Omit<ExecResult, 'images'>> {
  const stdout = new CappedOutput(options.maxOutputBytes);
  const stderr = new CappedOutput(options.maxOutputBytes);
  let timedOut = false;
  let stopped = false;
  let pid: number | undefined;
  const stop = () => {
    if (stopped || pid === undefined) return;
    stopped = true;
    void sandbox.commands.kill(pid).catch(() => undefined);
  };
  const onOutput = (into: CappedOutput) => (text: string) => {
    into.push(Buffer.from(text));
    if (stdout.seen + stderr.seen > E2B_MAX_STREAMED_BYTES) stop();
  };
  const controller = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
    // A sandbox that does not answer the kill still ends the call, a second later.
    setTimeout(() => controller.abort(), 1_000).unref();
  }, options.timeoutMs);
  const onAbort = () => {
    stop();
    controller.abort();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let result: CommandResult | undefined;
  try {
    const handle = await providerCall('start the command', () =>
      sandbox.commands.run(command, {
        background: true,
        cwd: E2B_WORKDIR,
        onStdout: onOutput(stdout),
        onStderr: onOutput(stderr),
        signal: controller.signal,
        // The stream itself may last a little longer than the call: the kill ends it.
        timeoutMs: options.timeoutMs + 5_000,
      }),
    );
    pid = handle.pid;
    if (timedOut || options.signal?.aborted) stop();
    result = await handle.wait();
  } catch (error) {
    if (isE2bError(error, 'CommandExitError')) result = error as CommandExitError;
    else if (!timedOut && !stopped) {
      if (error instanceof SandboxError) throw error;
      throw providerError('run the command', error);
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
  }
  return {
    stdout: stdout.text(),
    stderr: stderr.text(),
    exitCode: timedOut || stopped || result === undefined ? null : result.exitCode,
    timedOut,
    truncated: stdout.cut || stderr.cut,
  };
}

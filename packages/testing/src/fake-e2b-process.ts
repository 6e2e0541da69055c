import { spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { posix } from 'node:path';
import { killProcessGroup, readBody } from './fake-http.js';
import { HOME, type LiveSandbox } from './fake-e2b-world.js';

/** `process.Process/Start`: runs the command in bubblewrap and streams its events as Connect envelopes, then end-of-stream. */
export async function startProcess(
  sandbox: LiveSandbox,
  req: IncomingMessage,
  res: ServerResponse,
  pid: number,
): Promise<void> {
  const request = JSON.parse(unenvelope(await readBody(req)).toString('utf8')) as {
    process: { cmd: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
  };
  const cwd = posix.resolve(HOME, request.process.cwd ?? HOME);
  const argv = [request.process.cmd, ...(request.process.args ?? [])];
  const child = spawn('bwrap', [...bwrapArgs(sandbox, cwd, request.process.envs ?? {}), ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.on('error', () => undefined);
  sandbox.processes.set(pid, child);
  res.writeHead(200, { 'content-type': 'application/connect+json' });
  const send = (message: unknown, end = false) =>
    res.write(envelope(Buffer.from(JSON.stringify(message)), end));
  send({ event: { start: { pid } } });
  child.stdout!.on('data', (data: Buffer) =>
    send({ event: { data: { stdout: data.toString('base64') } } }),
  );
  child.stderr!.on('data', (data: Buffer) =>
    send({ event: { data: { stderr: data.toString('base64') } } }),
  );
  const deadline = Number(req.headers['connect-timeout-ms'] ?? 0);
  const timer = deadline > 0 ? setTimeout(() => killProcessGroup(child), deadline) : undefined;
  child.on('close', (code, signal) => {
    clearTimeout(timer);
    sandbox.processes.delete(pid);
    const exitCode = code ?? -1;
    send({
      event: {
        end: {
          exitCode,
          exited: code !== null,
          status: signal
            ? `signal: ${signal === 'SIGKILL' ? 'killed' : signal}`
            : `exit status ${exitCode}`,
        },
      },
    });
    send({}, true);
    res.end();
  });
}

/** A sandbox as bubblewrap sees it: its home and /tmp bound, the system read-only. */
function bwrapArgs(sandbox: LiveSandbox, cwd: string, envs: Record<string, string>): string[] {
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
  for (const dir of ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc']) {
    args.push('--ro-bind-try', dir, dir);
  }
  args.push('--dev', '/dev', '--proc', '/proc');
  args.push('--bind', sandbox.home, HOME, '--bind', sandbox.tmp, '/tmp');
  args.push('--clearenv', '--setenv', 'HOME', HOME, '--setenv', 'USER', 'user');
  args.push('--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin');
  args.push('--setenv', 'MPLBACKEND', 'Agg');
  for (const [key, value] of Object.entries(envs)) args.push('--setenv', key, value);
  args.push('--chdir', cwd, '--');
  return args;
}

/** A Connect envelope: flags (0x02 = end of stream), big-endian length, the message. */
function envelope(data: Buffer, end: boolean): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(end ? 2 : 0, 0);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

function unenvelope(data: Buffer): Buffer {
  return data.subarray(5, 5 + data.readUInt32BE(1));
}

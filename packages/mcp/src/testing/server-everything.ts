import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo } from 'node:net';
import { SERVER_EVERYTHING } from './stdio-command.js';

export interface EverythingServer {
  /** `http://127.0.0.1:<port>/sse` or `/mcp`. */
  readonly url: string;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * Starts `@modelcontextprotocol/server-everything` (installed from npm) over `sse` or
 * `streamableHttp` as a real process. It reads its port from `PORT` and listens on every
 * interface; it is ready once the port accepts connections.
 */
export async function startEverything(
  transport: 'sse' | 'streamableHttp',
  timeoutMs = 20_000,
): Promise<EverythingServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER_EVERYTHING, transport], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started = Date.now();
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() - started > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`server-everything ${transport} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}${transport === 'sse' ? '/sse' : '/mcp'}`,
    child,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

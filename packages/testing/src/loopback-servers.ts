/**
 * Small real servers on 127.0.0.1 for tests of outbound requests: one that counts the TCP
 * connections it accepted (so a test can show it was never contacted), an HTTPS server with a
 * self-signed certificate (a TLS failure), and a port with nothing listening (connection refused).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoopbackServer {
  readonly port: number;
  /** `http://127.0.0.1:<port>` (`https://` for the TLS server). */
  readonly origin: string;
  /** TCP connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(
  server: Server | HttpsServer,
  scheme: 'http' | 'https',
): Promise<LoopbackServer> {
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `${scheme}://127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An HTTP server on 127.0.0.1 that counts connections; `handler` answers (default: 200 `ok`). */
export function startCountingServer(
  handler: Handler = (_req, res) => res.end('ok'),
): Promise<LoopbackServer> {
  return serve(createHttpServer(handler), 'http');
}

/** An HTTPS server on 127.0.0.1 whose certificate is self-signed (generated with `openssl`). */
export function startSelfSignedServer(
  handler: Handler = (_req, res) => res.end('ok'),
): Promise<LoopbackServer> {
  const dir = mkdtempSync(join(tmpdir(), 'self-signed-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const key = readFileSync(join(dir, 'key.pem'));
    const cert = readFileSync(join(dir, 'cert.pem'));
    return serve(createHttpsServer({ key, cert }, handler), 'https');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export async function closedLoopbackPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

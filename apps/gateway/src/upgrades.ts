import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '@agent-backend/logger';
import {
  identify,
  kindOfPath,
  type ConnectionIdentity,
  type IdentityOptions,
} from './connection-identity.js';

/** An HTTP server's `upgrade` listener for the gateway's paths, and the switch to refuse new ones. */
export interface UpgradeHandler {
  readonly listener: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** New upgrades answer 503 from now on (shutdown). */
  stopAccepting(): void;
}

/**
 * Upgrades requests to the three WebSocket paths (spec 4.3): an unknown path answers 404; the
 * identity is checked (URL and token) and a refusal closes the socket with its documented code;
 * an accepted connection is handed to `accept`.
 */
export function createUpgradeHandler(options: {
  wss: WebSocketServer;
  identity: IdentityOptions;
  /**
   * `CORS_ALLOWED_ORIGINS`: when not empty, a `/ws/web` upgrade from a page of another origin
   * that is neither listed here nor in `identity.webOrigins` is refused with 403.
   */
  corsOrigins?: readonly string[];
  logger: Logger;
  accept(ws: WebSocket, identity: ConnectionIdentity): Promise<void>;
}): UpgradeHandler {
  const { wss, logger } = options;
  let accepting = true;
  const listener = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://gateway');
    const kind = kindOfPath(url.pathname);
    if (!kind || !accepting) {
      const status = accepting ? '404 Not Found' : '503 Service Unavailable';
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    socket.on('error', () => {});
    if (kind === 'web' && !webOriginAllowed(request, options)) {
      logger.info({ path: url.pathname, origin: request.headers.origin }, 'websocket refused');
      socket.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    void identify(request, kind, url, options.identity).then((identity) => {
      wss.handleUpgrade(request, socket, head, (ws) => {
        // From the upgrade on, a socket error (a frame over the size bound, a reset) must never
        // be unhandled: a refused socket still reads what the client sends before the close.
        ws.on('error', (error) =>
          logger.debug({ err: error, path: url.pathname }, 'websocket error'),
        );
        if ('code' in identity) {
          logger.info(
            { path: url.pathname, code: identity.code, reason: identity.reason },
            'websocket refused',
          );
          ws.close(identity.code, identity.reason);
          return;
        }
        options.accept(ws, identity).catch((error: unknown) => {
          logger.error({ err: error, user: identity.userId }, 'websocket setup failed');
          ws.close(1011, 'internal error');
        });
      });
    });
  };
  return {
    listener,
    stopAccepting: () => {
      accepting = false;
    },
  };
}

/**
 * The CORS list's check of a `/ws/web` upgrade: browsers send `Origin` on every WebSocket, so a
 * page of another origin not allowed cannot open the user's notifications with a token it holds.
 * No `Origin` (a program, not a browser) and the service's own pages (the playground: `Origin`'s
 * host is the `Host` the request came to) pass; `GATEWAY_WEB_ORIGINS` has its own check.
 */
function webOriginAllowed(
  request: IncomingMessage,
  options: { corsOrigins?: readonly string[]; identity: IdentityOptions },
): boolean {
  const cors = options.corsOrigins ?? [];
  const origin = request.headers.origin;
  if (cors.length === 0 || origin === undefined) return true;
  if (cors.includes(origin) || options.identity.webOrigins.includes(origin)) return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

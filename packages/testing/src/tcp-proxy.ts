import { createServer, connect, type Server, type Socket } from 'node:net';

/** What the proxy does with traffic right now. */
export type ProxyMode =
  /** Forwards both ways. */
  | 'forward'
  /**
   * Stops forwarding: open connections stay open but no byte passes either way (a stalled
   * network or a frozen server); new connections are accepted and stall too. Bytes read
   * meanwhile are held and delivered when the mode returns to `forward`.
   */
  | 'stall'
  /** Destroys every open connection and each new one at once (a dropped network, RST). */
  | 'drop'
  /** Open connections go on; each new one is reset at once (a server restarting). */
  | 'refuse';

/**
 * A TCP proxy written with `node:net`, put between the roles and Redis or PostgreSQL so a test
 * can stall or drop their traffic for a while without touching the server itself.
 */
export interface TcpProxy {
  readonly port: number;
  readonly mode: ProxyMode;
  setMode(mode: ProxyMode): void;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Local ports of the proxy's own connections to the target (to find them server-side). */
  upstreamPorts(): number[];
  close(): Promise<void>;
}

/** Sees the bytes of one proxied connection as they pass, before the mode applies to them. */
export interface ConnectionObserver {
  /** Bytes from the client, on their way to the target. */
  up?(chunk: Buffer): void;
  /** Bytes from the target, on their way to the client. */
  down?(chunk: Buffer): void;
}

export interface TcpProxyOptions {
  /** Called for each accepted connection; what it returns sees that connection's bytes. */
  observe?: () => ConnectionObserver;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  held: Array<{ to: Socket; chunk: Buffer }>;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  options: TcpProxyOptions = {},
): Promise<TcpProxy> {
  let mode: ProxyMode = 'forward';
  let accepted = 0;
  const pairs = new Set<Pair>();
  const pipe = (pair: Pair, from: Socket, to: Socket, see?: (chunk: Buffer) => void) => {
    from.on('data', (chunk: Buffer) => {
      see?.(chunk);
      if (mode === 'stall' || pair.held.length > 0) {
        pair.held.push({ to, chunk });
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
  };
  const server: Server = createServer((client) => {
    accepted++;
    if (mode === 'drop' || mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target);
    const pair: Pair = { client, upstream, held: [] };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      if (!client.destroyed) client.destroy();
      if (!upstream.destroyed) upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const observer = options.observe?.();
    pipe(pair, client, upstream, observer?.up?.bind(observer));
    pipe(pair, upstream, client, observer?.down?.bind(observer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get mode() {
      return mode;
    },
    get accepted() {
      return accepted;
    },
    setMode(next) {
      mode = next;
      if (next === 'drop') {
        for (const pair of [...pairs]) {
          pair.client.resetAndDestroy();
          pair.upstream.resetAndDestroy();
        }
      } else if (next === 'forward') {
        for (const pair of pairs) {
          const held = pair.held.splice(0);
          for (const { to, chunk } of held) if (!to.destroyed) to.write(chunk);
        }
      }
    },
    upstreamPorts: () =>
      [...pairs].map((p) => p.upstream.localPort).filter((p): p is number => p !== undefined),
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) {
          pair.client.destroy();
          pair.upstream.destroy();
        }
        server.close(() => resolve());
      }),
  };
}

import type { ServerMessage, WebClientMessageInput } from '@agent-backend/protocol';

/** Close codes after which reconnecting cannot help (docs/protocol.md, WebSocket). */
const FINAL_CLOSE_CODES: Readonly<Record<number, string>> = {
  4001: 'the gateway saw no user_id (close 4001)',
  4002: 'the gateway refused the user_id (close 4002)',
  4403: 'the gateway refused this user or origin (close 4403)',
  4009: 'a newer connection replaced this one (close 4009)',
};
const UNAUTHORIZED = 4401;

export interface BrowserWebClientOptions {
  /**
   * The gateway's base address: `https://host` (mapped to `wss://host`), `ws(s)://host`, or one
   * with a path prefix. `/ws/web` is appended.
   */
  readonly url: string;
  /** The user whose web connection this is; the `sub` of the token. */
  readonly userId: string;
  /** The access token, or a function answering the current one (asked before each connection). */
  readonly token: string | (() => string | Promise<string>);
  /**
   * Called when the gateway closes with 4401 (token missing, invalid or expired): answer a fresh
   * access token and the client connects again with it, or `undefined` to stop. Without it a
   * `token` function is simply asked again. A second 4401 in a row stops the client.
   */
  readonly onUnauthorized?: () => string | undefined | Promise<string | undefined>;
  /** Delays between reconnection attempts (doubling, with jitter); `false` stops at the first close. */
  readonly reconnect?: false | { readonly initialDelayMs?: number; readonly maxDelayMs?: number };
  /**
   * A `ping` goes out this often; when nothing at all arrived since the previous one, the
   * connection is taken for dead and replaced. @default 20_000
   */
  readonly pingIntervalMs?: number;
  /** The WebSocket class. @default globalThis.WebSocket */
  readonly WebSocket?: typeof WebSocket;
}

/** What {@link BrowserWebClient} reports to its listeners. */
export type BrowserWebClientEvent =
  | { readonly type: 'open' }
  /** A frame from the gateway (parsed JSON, not validated against the schemas). */
  | { readonly type: 'message'; readonly message: ServerMessage }
  /** The socket closed; `reconnecting` is false when the client has stopped for good. */
  | {
      readonly type: 'close';
      readonly code: number;
      readonly reason: string;
      readonly reconnecting: boolean;
      /** Why the client stopped, when it stopped on its own (a final close code, a refused token). */
      readonly error?: string;
    };

/**
 * A web client's connection to the gateway (`/ws/web`) on the platform's own `WebSocket`, so it
 * runs in browsers (and in Node.js 22+, or with `options.WebSocket`); Node.js programs that want
 * request/reply helpers use `WebClient` of `@agent-backend/client/node`. Browsers cannot set
 * headers on a WebSocket, so the token travels as the `token` query parameter (the gateway
 * redacts it from its logs). The client reconnects after a dropped connection, a restarting
 * gateway (1001) or a slow-consumer close (4008), asks for a fresh token after a 4401, and stops
 * on 4001, 4002, 4403 and 4009.
 */
export class BrowserWebClient {
  readonly #options: BrowserWebClientOptions;
  readonly #listeners = new Set<(event: BrowserWebClientEvent) => void>();
  #socket: WebSocket | undefined;
  #token: string | undefined;
  #closed = false;
  #attempt = 0;
  #unauthorizedInARow = 0;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #ping: ReturnType<typeof setInterval> | undefined;
  #heard = false;

  constructor(options: BrowserWebClientOptions) {
    if (typeof options.userId !== 'string' || options.userId.length === 0)
      throw new TypeError('userId must be a non-empty string');
    webSocketUrl(options.url, options.userId, ''); // a bad url throws here, not later
    this.#options = options;
    void this.#connect();
  }

  /** True while the socket is open. */
  get connected(): boolean {
    return this.#socket?.readyState === 1;
  }

  /** Adds a listener; returns a function that removes it. */
  on(listener: (event: BrowserWebClientEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Sends a frame when the socket is open; answers whether it was sent. */
  send(message: WebClientMessageInput): boolean {
    if (!this.connected) return false;
    this.#socket!.send(JSON.stringify(message));
    return true;
  }

  /** Closes the socket and stops reconnecting. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#ping);
    this.#socket?.close(1000);
    this.#socket = undefined;
  }

  #emit(event: BrowserWebClientEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  async #connect(): Promise<void> {
    let token: string;
    try {
      const { token: given } = this.#options;
      token = this.#token ?? (typeof given === 'function' ? await given() : given);
    } catch (error) {
      this.#stop(0, '', `could not get a token: ${(error as Error).message}`);
      return;
    }
    this.#token = undefined;
    if (this.#closed) return;
    const Socket = this.#options.WebSocket ?? globalThis.WebSocket;
    const socket = new Socket(webSocketUrl(this.#options.url, this.#options.userId, token));
    this.#socket = socket;
    socket.addEventListener('open', () => {
      if (this.#socket !== socket) return;
      this.#heard = true;
      clearInterval(this.#ping);
      this.#ping = setInterval(() => {
        if (!this.#heard) return socket.close(4000, 'no answer');
        this.#heard = false;
        this.send({ type: 'ping' });
      }, this.#options.pingIntervalMs ?? 20_000);
      this.#emit({ type: 'open' });
    });
    socket.addEventListener('message', (event: { data: unknown }) => {
      if (this.#socket !== socket) return;
      this.#heard = true;
      this.#unauthorizedInARow = 0;
      this.#attempt = 0;
      let message: unknown;
      try {
        message = JSON.parse(String(event.data));
      } catch {
        return;
      }
      if (typeof message === 'object' && message !== null && 'type' in message)
        this.#emit({ type: 'message', message: message as ServerMessage });
    });
    socket.addEventListener('close', (event: { code: number; reason: string }) => {
      if (this.#socket !== socket) return;
      clearInterval(this.#ping);
      this.#socket = undefined;
      void this.#afterClose(event.code, event.reason);
    });
  }

  async #afterClose(code: number, reason: string): Promise<void> {
    if (this.#closed) return this.#emit({ type: 'close', code, reason, reconnecting: false });
    const final = FINAL_CLOSE_CODES[code];
    if (final) return this.#stop(code, reason, final);
    if (code === UNAUTHORIZED) {
      if (++this.#unauthorizedInARow > 1)
        return this.#stop(code, reason, 'the gateway refused the fresh token too (close 4401)');
      if (this.#options.onUnauthorized) {
        const fresh = await Promise.resolve()
          .then(() => this.#options.onUnauthorized!())
          .catch(() => undefined);
        if (!fresh) return this.#stop(code, reason, 'the token was refused (close 4401)');
        this.#token = fresh;
      } else if (typeof this.#options.token !== 'function') {
        return this.#stop(code, reason, 'the token was refused (close 4401)');
      }
    }
    if (this.#options.reconnect === false)
      return this.#stop(code, reason, `the connection closed (${code})`);
    this.#emit({ type: 'close', code, reason, reconnecting: true });
    const { initialDelayMs = 500, maxDelayMs = 30_000 } = this.#options.reconnect ?? {};
    const bound = Math.min(maxDelayMs, initialDelayMs * 2 ** this.#attempt++);
    const delay = code === UNAUTHORIZED ? 0 : bound / 2 + (Math.random() * bound) / 2;
    this.#retry = setTimeout(() => void this.#connect(), delay);
  }

  #stop(code: number, reason: string, error: string): void {
    this.#closed = true;
    this.#emit({ type: 'close', code, reason, reconnecting: false, error });
  }
}

/** `base` + `/ws/web?user_id=…&token=…`, with `http(s)` mapped to `ws(s)`. */
function webSocketUrl(base: string, userId: string, token: string): string {
  const url = new URL(base);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new TypeError(`gateway url must be ws, wss, http or https, not ${url.protocol}`);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/ws/web`;
  url.search = '';
  url.hash = '';
  url.searchParams.set('user_id', userId);
  url.searchParams.set('token', token);
  return url.href;
}

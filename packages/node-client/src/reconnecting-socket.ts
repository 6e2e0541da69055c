import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { CONNECTION_ORDER_PARAMS } from '@agent-backend/protocol';
import { Backoff, resolveReconnectOptions, type ReconnectOptions } from './backoff.js';
import { closeAction, handshakeAction, type CloseAction } from './close-codes.js';
import { ClientError } from './errors.js';
import { redactUrl } from './ws-url.js';

/** Why `getToken()` is being asked: a plain (re)connection, or the server refused the last token. */
export type TokenReason = 'connect' | 'unauthorized';

/** Connection options shared by every client. */
export interface ConnectionOptions {
  /** A fixed access token. Neither this nor `getToken`: connect without one (legacy servers). */
  token?: string;
  /**
   * Called before every connection attempt; return a valid access token. After a 4401 close
   * (or HTTP 401) it is called with `reason: 'unauthorized'`: refresh the token then. If the
   * fresh token is refused too, the client stops with `unauthorized`. If it throws, the client
   * reports `token_unavailable` and retries with backoff.
   */
  getToken?: (context: { reason: TokenReason }) => string | Promise<string>;
  /**
   * How the token travels. `header` (`Authorization: Bearer`) keeps it out of URLs and access
   * logs; `query` (`?token=`) is what browsers can do.
   * @default 'header'
   */
  tokenTransport?: 'header' | 'query';
  /** Backoff between reconnection attempts. */
  reconnect?: ReconnectOptions;
  /** Deadline of the opening handshake. @default 10_000 */
  connectTimeoutMs?: number;
  /** Largest inbound frame accepted; a larger one closes the socket with 1009. @default 16 MiB */
  maxPayloadBytes?: number;
  /** Extra headers on the upgrade request, e.g. `Origin`. */
  headers?: Readonly<Record<string, string>>;
  /** Local address the socket binds to (Node only), e.g. to spread many clients over sources. */
  localAddress?: string;
}

/** Payload of the `disconnected` event. */
export interface DisconnectInfo {
  /** WebSocket close code; 1006 when there was no close frame (network failure, refused). */
  readonly code: number;
  readonly reason: string;
  /** The HTTP status when the server answered the upgrade with something other than 101. */
  readonly httpStatus?: number;
  readonly willReconnect: boolean;
  /** Delay before the next attempt, when `willReconnect`. */
  readonly delayMs?: number;
}

/** What a client plugs into the socket. */
export interface SocketHooks {
  onConnecting(attempt: number, url: string): void;
  onOpen(url: string): void;
  onFrame(frame: unknown): void;
  /** Every `keepaliveMs` while open: send a heartbeat or ping. */
  onTick(): void;
  onDown(info: DisconnectInfo): void;
  /** A problem that does not end the client. */
  onError(error: ClientError): void;
  /** The client will not connect again: `closed` after `close()`, or a final close code. */
  onStop(error: ClientError): void;
}

export interface SocketSettings {
  /** The gateway URL without the token. */
  readonly url: URL;
  readonly keepaliveMs: number;
  /** Without any inbound frame (or WebSocket ping) for this long, the socket is dropped. */
  readonly idleTimeoutMs: number;
  readonly options: ConnectionOptions;
  /**
   * Name each attempt's order in the URL (`instance_id`, random per socket object, and
   * `connection_seq`, the attempt number), so the gateway never lets a socket this client gave
   * up on, processed late, replace a later one (it closes the stale one with 4011). Nodes only.
   */
  readonly ordered?: boolean;
}

type State = 'idle' | 'connecting' | 'open' | 'waiting' | 'closing' | 'stopped';

/** How long `close()` waits for the server's close frame before cutting the TCP connection. */
const CLOSE_HANDSHAKE_MS = 2_000;

/**
 * One logical connection that survives socket failures: it connects, reconnects with backoff
 * and jitter, refreshes the token once after 4401, stops on final close codes, keeps the
 * connection alive and drops it when the server falls silent. Clients add the protocol on top
 * through {@link SocketHooks}. After `close()` no timer or socket is left.
 */
export class ReconnectingSocket {
  readonly #settings: SocketSettings;
  readonly #hooks: SocketHooks;
  readonly #backoff: Backoff;
  readonly #reconnect;
  #state: State = 'idle';
  #ws: WebSocket | undefined;
  #attempts = 0;
  #authRefreshes = 0;
  #tokenReason: TokenReason = 'connect';
  #lastInbound = 0;
  #handshakeStatus: number | undefined;
  #downReason: string | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #tickTimer: ReturnType<typeof setInterval> | undefined;
  #stableTimer: ReturnType<typeof setTimeout> | undefined;
  #closing: Promise<void> | undefined;
  /** The socket given up on by `drop()`: whatever code it ends with, the client reconnects. */
  #abandoned: WebSocket | undefined;
  readonly #instance = randomUUID();

  constructor(settings: SocketSettings, hooks: SocketHooks, random?: () => number) {
    this.#settings = settings;
    this.#hooks = hooks;
    this.#reconnect = resolveReconnectOptions(settings.options.reconnect);
    this.#backoff = new Backoff(this.#reconnect, random);
  }

  get isOpen(): boolean {
    return this.#state === 'open' && this.#ws?.readyState === WebSocket.OPEN;
  }

  get isStopped(): boolean {
    return this.#state === 'stopped' || this.#state === 'closing';
  }

  start(): void {
    if (this.#state !== 'idle') return;
    void this.#connect();
  }

  /** Sends one JSON frame; false when the socket is not open (the frame is dropped). */
  send(message: unknown): boolean {
    if (!this.isOpen || !this.#ws) return false;
    this.#ws.send(JSON.stringify(message));
    return true;
  }

  /** Ends the current socket and reconnects with backoff, e.g. when registration was refused. */
  drop(reason: string): void {
    if (!this.#ws || this.isStopped) return;
    this.#downReason = reason;
    this.#abandoned = this.#ws;
    this.#ws.terminate();
  }

  /** The connection is usable (the node is registered): a later 4401 may refresh again. */
  markReady(): void {
    this.#authRefreshes = 0;
  }

  /** Closes the socket (close code 1000) and stops reconnecting. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'closing';
    this.#clearTimers();
    const ws = this.#ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        const cut = setTimeout(() => ws.terminate(), CLOSE_HANDSHAKE_MS);
        ws.once('close', () => {
          clearTimeout(cut);
          resolve();
        });
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(1000, 'client closing');
      });
    }
    this.#ws = undefined;
    this.#state = 'stopped';
    this.#hooks.onStop(new ClientError('closed', 'the client was closed'));
  }

  async #connect(): Promise<void> {
    this.#state = 'connecting';
    const attempt = ++this.#attempts;
    let token: string | undefined;
    try {
      token = await this.#token();
    } catch (error) {
      if (this.#state !== 'connecting') return;
      const delayMs = this.#backoff.next();
      this.#hooks.onError(
        new ClientError('token_unavailable', `getToken failed: ${messageOf(error)}`, {
          retryInMs: delayMs,
        }),
      );
      this.#schedule(delayMs);
      return;
    }
    if (this.#state !== 'connecting') return;

    const { url: baseUrl, options } = this.#settings;
    const url = new URL(baseUrl.href);
    if (this.#settings.ordered) {
      url.searchParams.set(CONNECTION_ORDER_PARAMS.instance, this.#instance);
      url.searchParams.set(CONNECTION_ORDER_PARAMS.seq, String(attempt));
    }
    const headers: Record<string, string> = { ...options.headers };
    if (token !== undefined && options.tokenTransport === 'query')
      url.searchParams.set('token', token);
    else if (token !== undefined) headers.authorization = `Bearer ${token}`;
    this.#hooks.onConnecting(attempt, redactUrl(url));

    const ws = new WebSocket(url, {
      headers,
      handshakeTimeout: options.connectTimeoutMs ?? 10_000,
      maxPayload: options.maxPayloadBytes ?? 16 * 1024 * 1024,
      ...(options.localAddress !== undefined ? { localAddress: options.localAddress } : {}),
    });
    this.#ws = ws;
    this.#handshakeStatus = undefined;
    ws.on('unexpected-response', (_request, response) => {
      this.#handshakeStatus = response.statusCode;
      this.#downReason = `the server answered the upgrade with HTTP ${response.statusCode}`;
      response.resume();
      ws.terminate();
    });
    ws.on('error', (error) => {
      this.#downReason ??= error.message;
    });
    ws.on('open', () => this.#onOpen(ws, url));
    ws.on('ping', () => {
      this.#lastInbound = Date.now();
    });
    ws.on('message', (data, isBinary) => this.#onMessage(ws, data, isBinary));
    ws.on('close', (code, reason) => this.#onClose(ws, code, reason.toString('utf8')));
  }

  async #token(): Promise<string | undefined> {
    const { token, getToken } = this.#settings.options;
    if (!getToken) return token;
    const reason = this.#tokenReason;
    this.#tokenReason = 'connect';
    return await getToken({ reason });
  }

  #onOpen(ws: WebSocket, url: URL): void {
    if (ws !== this.#ws || this.#state !== 'connecting') return;
    this.#state = 'open';
    this.#lastInbound = Date.now();
    this.#stableTimer = setTimeout(() => {
      this.#backoff.reset();
      this.#authRefreshes = 0;
    }, this.#reconnect.stableAfterMs);
    this.#tickTimer = setInterval(() => this.#tick(), this.#settings.keepaliveMs);
    this.#hooks.onOpen(redactUrl(url));
  }

  #tick(): void {
    const silentMs = Date.now() - this.#lastInbound;
    if (silentMs > this.#settings.idleTimeoutMs) {
      this.drop(`no frame from the server for ${silentMs} ms`);
      return;
    }
    this.#hooks.onTick();
  }

  #onMessage(ws: WebSocket, data: WebSocket.RawData, isBinary: boolean): void {
    if (ws !== this.#ws) return;
    this.#lastInbound = Date.now();
    const text = (
      Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
    ).toString('utf8');
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary frame');
      frame = JSON.parse(text);
    } catch {
      this.#hooks.onError(
        new ClientError('protocol_error', 'dropped a frame that is not JSON text'),
      );
      return;
    }
    this.#hooks.onFrame(frame);
  }

  #onClose(ws: WebSocket, code: number, closeReason: string): void {
    if (ws !== this.#ws) return;
    this.#ws = undefined;
    this.#clearTimers();
    if (this.#state === 'closing' || this.#state === 'stopped') return;
    const httpStatus = this.#handshakeStatus;
    const reason = closeReason || this.#downReason || '';
    this.#downReason = undefined;
    const base = httpStatus === undefined ? { code, reason } : { code, reason, httpStatus };
    // A socket the client gave up on may still bring a final code (a 4009 from a gateway that
    // processed it late): the client already moved on, so it only reconnects.
    const abandoned = ws === this.#abandoned;
    this.#abandoned = undefined;
    const action: CloseAction = abandoned
      ? { action: 'reconnect' }
      : httpStatus === undefined
        ? closeAction(code)
        : handshakeAction(httpStatus);

    if (action.action === 'stop') {
      this.#hooks.onDown({ ...base, willReconnect: false });
      this.#stop(new ClientError(action.code, action.message, { closeCode: code, httpStatus }));
    } else if (action.action === 'refresh_token') {
      if (!this.#settings.options.getToken || this.#authRefreshes >= 1) {
        this.#hooks.onDown({ ...base, willReconnect: false });
        const message = this.#settings.options.getToken
          ? 'the server refused a freshly obtained token'
          : 'the server refused the token and there is no getToken() to refresh it';
        this.#stop(new ClientError('unauthorized', message, { closeCode: code, httpStatus }));
        return;
      }
      this.#authRefreshes++;
      this.#tokenReason = 'unauthorized';
      this.#hooks.onDown({ ...base, willReconnect: true, delayMs: 0 });
      this.#schedule(0);
    } else if (!this.#reconnect.enabled) {
      this.#hooks.onDown({ ...base, willReconnect: false });
      this.#stop(new ClientError('disconnected', `the connection ended (${code}) ${reason}`));
    } else {
      const delayMs = this.#backoff.next();
      this.#hooks.onDown({ ...base, willReconnect: true, delayMs });
      this.#schedule(delayMs);
    }
  }

  #schedule(delayMs: number): void {
    this.#state = 'waiting';
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#connect();
    }, delayMs);
  }

  #stop(error: ClientError): void {
    this.#state = 'stopped';
    this.#clearTimers();
    this.#closing = Promise.resolve();
    this.#hooks.onStop(error);
  }

  #clearTimers(): void {
    clearTimeout(this.#retryTimer);
    clearInterval(this.#tickTimer);
    clearTimeout(this.#stableTimer);
    this.#retryTimer = this.#tickTimer = this.#stableTimer = undefined;
  }
}

/** An error's message, never its stack (which may hold URLs with tokens in other libraries). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

import { once } from 'node:events';
import type { Response } from 'express';
import type { Level } from '@agent-backend/metrics';

export interface SseStreamOptions {
  /** A `: keepalive` comment after this long without a write. */
  keepaliveMs: number;
  /**
   * A client that takes no bytes for this long while an event waits (it stopped reading, its
   * socket buffers are full) has the stream ended: it resumes with Last-Event-ID.
   */
  stallTimeoutMs: number;
  /** Told the unsent bytes when a stalled stream is ended (for the log). */
  onStall?: (unsentBytes: number) => void;
  /** Counts the streams open (up at the headers, down when the response closes). */
  open?: Level;
}

/**
 * One server-sent-events response, written on the Node response underneath Express: headers that
 * stop proxy buffering, an `id:` per event, `: keepalive` comments after `keepaliveMs` without a
 * write (so proxies and clients do not time out during a long tool call), and backpressure:
 * `send` resolves only once the socket took the bytes, so a slow client slows its own writer
 * instead of growing a buffer in the process: at most one event (plus keepalives) is unsent.
 *
 * A client that stops reading altogether would hold its connection, and the event waiting for
 * it, for as long as the run's log is kept: after `stallTimeoutMs` without the socket taking a
 * byte the response is destroyed (found by tests/faults/slow-consumers.test.ts). The run is not
 * affected; the client resumes from its last event id (docs/agent.md).
 */
export class SseStream {
  private readonly res: Response;
  private readonly keepalive: NodeJS.Timeout;
  private readonly closedController = new AbortController();

  /** `options.open` counts the streams open (up at the headers, down when the response closes). */
  constructor(
    reply: Response,
    private readonly options: SseStreamOptions,
  ) {
    const open = options.open;
    this.res = reply;
    const headers: Record<string, string> = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    };
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (typeof value === 'string') headers[name] = value;
    }
    this.res.writeHead(200, headers);
    this.res.flushHeaders();
    open?.inc();
    this.res.once('close', () => {
      open?.dec();
      this.closedController.abort();
    });
    this.keepalive = setInterval(() => {
      // A keepalive is only for an idle stream: none while bytes wait for a slow client.
      if (!this.closed && this.res.writableLength === 0) this.res.write(': keepalive\n\n');
    }, options.keepaliveMs);
    this.keepalive.unref();
  }

  /** Aborts when the client went away or the stream was ended. */
  get signal(): AbortSignal {
    return this.closedController.signal;
  }

  get closed(): boolean {
    return this.closedController.signal.aborted || this.res.writableEnded;
  }

  /** Writes one event; resolves when it is handed to the socket (or the client is gone). */
  async send(id: string, data: string): Promise<void> {
    if (this.closed) return;
    this.keepalive.refresh();
    if (this.res.write(`id: ${id}\ndata: ${data}\n\n`)) return;
    // Waits for the socket to take the bytes, at most `stallTimeoutMs` while it takes none.
    // `once` removes its listener when the signal aborts, so waits do not pile up listeners.
    const socket = this.res.socket;
    for (;;) {
      const written = socket?.bytesWritten ?? 0;
      const stalled = AbortSignal.timeout(this.options.stallTimeoutMs);
      const drained = await once(this.res, 'drain', {
        signal: AbortSignal.any([this.closedController.signal, stalled]),
      }).then(
        () => true,
        () => false,
      );
      if (drained || this.closed) return;
      // The socket took bytes meanwhile (a slow but reading client): keep waiting.
      if ((socket?.bytesWritten ?? 0) > written) continue;
      this.options.onStall?.(this.res.writableLength);
      clearInterval(this.keepalive);
      this.res.destroy();
      return;
    }
  }

  end(): void {
    clearInterval(this.keepalive);
    if (!this.res.writableEnded) this.res.end();
  }
}

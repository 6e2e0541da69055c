import { once } from 'node:events';
import type { Response } from 'express';
import type { Level } from '@agent-backend/metrics';

/**
 * One server-sent-events response, written on the Node response underneath Express: headers that stop proxy buffering, an `id:` per event, `: keepalive`
 * comments after `keepaliveMs` without a write (so proxies and clients do not time out during
 * a long tool call), and backpressure: `send` resolves only once the socket took the bytes, so
 * a slow client slows its own writer instead of growing a buffer in the process.
 */
export class SseStream {
  private readonly res: Response;
  private readonly keepalive: NodeJS.Timeout;
  private readonly closedController = new AbortController();

  /** `open` counts the streams open (up at the headers, down when the response closes). */
  constructor(reply: Response, keepaliveMs: number, open?: Level) {
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
      if (!this.closed) this.res.write(': keepalive\n\n');
    }, keepaliveMs);
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
    // `once` removes its listener when the signal aborts, so waits do not pile up listeners.
    await once(this.res, 'drain', { signal: this.closedController.signal }).catch(() => undefined);
  }

  end(): void {
    clearInterval(this.keepalive);
    if (!this.res.writableEnded) this.res.end();
  }
}

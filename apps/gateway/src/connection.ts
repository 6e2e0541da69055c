import { randomUUID } from 'node:crypto';
import WebSocket, { type RawData } from 'ws';
import {
  fieldErrors,
  jsonTextNeedsTextCheck,
  textProblems,
  WS_CLOSE,
  type ServerMessage,
} from '@agent-backend/protocol';
import type { Logger } from '@agent-backend/logger';
import type { Count, GatewayMetrics } from '@agent-backend/metrics';
import type { z } from 'zod';
import type { ConnectionIdentity } from './connection-identity.js';
import { FrameRate, type FrameRateOptions } from './frame-rate.js';

export interface ConnectionLimits {
  /** Unsent bytes allowed before the peer is closed as a slow consumer. */
  maxBufferedBytes: number;
  /** The frame and byte rate of one connection (`GATEWAY_FRAMES_PER_SECOND`, ...). */
  frameRate?: Omit<FrameRateOptions, 'now'>;
  /** Counts a frame refused by the rate (`rate_limited_total{limit="gateway_frames"}`). */
  onRateLimited?: () => void;
}

/** Error codes of the `error` message the gateway sends for a bad frame (docs/gateway.md). */
export type FrameErrorCode =
  | 'invalid_json'
  | 'invalid_message'
  | 'unknown_type'
  | 'internal_error'
  | 'not_registered'
  | 'task_forbidden'
  | 'too_many_tools'
  | 'rate_limited';

/**
 * One WebSocket client. Owns parsing (every frame is JSON, validated with the shared schemas;
 * a bad frame gets an `error` message and the connection stays open), ordering (frames are
 * handled one at a time, in arrival order), liveness (`alive` is cleared by each server ping
 * and set by any frame or pong), and backpressure (a send that finds more than
 * `maxBufferedBytes` unsent closes the peer with 4008 instead of buffering without bound).
 */
export abstract class Connection {
  readonly id = randomUUID();
  /** Set by any frame or pong; the ping loop terminates a connection that stays silent. */
  alive = true;
  private queue: Promise<void> = Promise.resolve();
  private closing = false;
  private readonly framesOut: Count;

  constructor(
    readonly ws: WebSocket,
    readonly identity: ConnectionIdentity,
    protected readonly logger: Logger,
    private readonly limits: ConnectionLimits,
    metrics: GatewayMetrics,
  ) {
    const framesIn = metrics.frames(identity.kind, 'in');
    this.framesOut = metrics.frames(identity.kind, 'out');
    const open = metrics.connections(identity.kind);
    open.inc();
    ws.once('close', () => open.dec());
    const rate = limits.frameRate ? new FrameRate(limits.frameRate) : undefined;
    /** One `rate_limited` error per run of refused frames, so a flood is not echoed. */
    let refusing = false;
    ws.on('message', (data, isBinary) => {
      framesIn.inc();
      this.alive = true;
      const verdict = rate?.take(frameBytes(data)) ?? 'ok';
      if (verdict === 'ok') {
        refusing = false;
        this.queue = this.queue.then(() => this.onFrame(data, isBinary));
        return;
      }
      limits.onRateLimited?.();
      if (verdict === 'abuse') {
        this.logger.warn({ conn: this.id, user: this.userId }, 'closing a flooding connection');
        this.close(WS_CLOSE.policyViolation, 'too many frames: over the rate for too long');
      } else if (!refusing) {
        refusing = true;
        this.sendError('rate_limited', 'too many frames or bytes a second; this frame was dropped');
      }
    });
    ws.on('pong', () => {
      this.alive = true;
      this.onPong();
    });
    ws.on('error', (error) => this.logger.debug({ err: error, conn: this.id }, 'websocket error'));
  }

  /**
   * Frames received from now on wait for `ready` (its failure too) before they are handled: a
   * `pong` or `heartbeat_ack` then tells the client that what its connection set up (its node in
   * presence, its user's web subscription) is in place.
   */
  holdFramesUntil(ready: Promise<unknown>): void {
    this.queue = this.queue
      .then(() => ready)
      .then(
        () => undefined,
        () => undefined,
      );
  }

  get userId(): string {
    return this.identity.userId;
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN && !this.closing;
  }

  /** Sends a JSON message; false when the socket is closed or the peer is too slow (then closed). */
  /**
   * Whether a message published to the user's web channel is for this connection (every message
   * is, unless a connection kind says otherwise).
   */
  wants(_message: ServerMessage): boolean {
    return true;
  }

  send(message: object): boolean {
    if (!this.isOpen) return false;
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) {
      this.logger.warn(
        { conn: this.id, user: this.userId, buffered: this.ws.bufferedAmount },
        'closing slow consumer',
      );
      this.close(WS_CLOSE.slowConsumer, 'slow consumer: too many unsent bytes');
      return false;
    }
    this.ws.send(JSON.stringify(message));
    this.framesOut.inc();
    return true;
  }

  sendError(code: FrameErrorCode, message: string): void {
    this.send({ type: 'error', code, message });
  }

  /**
   * Closes with a code; a peer that does not complete the closing handshake within a second
   * (e.g. it stopped reading) is cut off.
   */
  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    try {
      this.ws.close(code, reason);
    } catch {
      this.ws.terminate();
    }
    setTimeout(() => {
      if (this.ws.readyState !== WebSocket.CLOSED) this.ws.terminate();
    }, 1_000).unref();
  }

  /** Parses `frame` with `schema`, answering `invalid_message` (naming the fields) on failure. */
  protected parse<S extends z.ZodType>(schema: S, frame: unknown): z.output<S> | undefined {
    const result = schema.safeParse(frame);
    if (result.success) return result.data;
    const problems = fieldErrors(result.error)
      .map((e) => (e.path ? `${e.path}: ${e.message}` : e.message))
      .join('; ');
    this.sendError('invalid_message', problems);
    return undefined;
  }

  /**
   * Handles one parsed JSON object frame; `text` is the JSON text it was parsed from (checked
   * against the text rules like the frame), for a handler that passes the frame on whole.
   */
  protected abstract handle(frame: Record<string, unknown>, text: string): Promise<void>;

  /** Called on each pong; nodes refresh their presence here. */
  protected onPong(): void {}

  private async onFrame(data: RawData, isBinary: boolean): Promise<void> {
    if (!this.isOpen) return;
    let frame: unknown;
    let text: string;
    try {
      text = isBinary ? Buffer.from(data as Buffer).toString('utf8') : data.toString();
      frame = JSON.parse(text);
    } catch {
      this.sendError('invalid_json', 'frame is not valid JSON');
      return;
    }
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
      this.sendError('invalid_message', 'frame must be a JSON object');
      return;
    }
    // The HTTP text rules (NUL, unpaired surrogates, depth), before any handler or store sees it;
    // a frame whose text cannot break them (a heartbeat, most tool results) is not walked.
    const problems = jsonTextNeedsTextCheck(text) ? textProblems(frame) : [];
    if (problems.length > 0) {
      this.sendError('invalid_message', problems.map((p) => `${p.path}: ${p.message}`).join('; '));
      return;
    }
    try {
      await this.handle(frame as Record<string, unknown>, text);
    } catch (error) {
      this.logger.error({ err: error, conn: this.id, user: this.userId }, 'frame handler failed');
      this.sendError('internal_error', 'the server could not handle this message');
    }
  }
}

function frameBytes(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

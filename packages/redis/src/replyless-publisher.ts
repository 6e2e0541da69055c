import type { Redis as StandaloneRedis } from 'ioredis';
import { duplicateRedis, type Redis } from './connection.js';

/** What a connection writes to stop Redis from answering its commands (`CLIENT REPLY OFF`). */
const REPLY_OFF = '*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n';

export interface ReplylessPublisherOptions {
  /** Connection name (`CLIENT SETNAME`). */
  name: string;
  /**
   * Sends again, the way that waits for Redis's answer, a message that may not have reached
   * Redis: it was written before the connection dropped or went silent and was not confirmed.
   */
  resend: (channel: string, payload: string) => void;
  /** Connection errors (refused, reset); ioredis reconnects after them. @default ignored */
  onError?: (err: Error) => void;
  /** How long after a write what was written is confirmed. @default 1000 */
  confirmAfterMs?: number;
  /** A confirmation unanswered this long means the connection is gone: it is reopened. @default 3000 */
  confirmTimeoutMs?: number;
}

/**
 * PUBLISH on a connection that Redis does not answer (`CLIENT REPLY OFF`), so the process is not
 * woken again by each answer: a gateway at a few hundred tool calls a second spent about a
 * third of its CPU on those wake-ups (docs/BENCHMARKS.md). The price is the receiver count,
 * which this publisher cannot give: it is for messages whose sender does not need it (a bus
 * reply whose requester asks again when its inbox may have missed one).
 *
 * Nothing is lost silently. Written messages are kept until Redis confirms them: at most
 * {@link ReplylessPublisherOptions.confirmAfterMs} after a write, the publisher turns replies
 * back on with `CLIENT REPLY ON` through ioredis, whose `OK` comes after every command written
 * before it, and then off again. Meanwhile (and while the connection is not ready) `publish`
 * returns false and the caller publishes the usual way. When the connection drops, or a
 * confirmation goes unanswered for {@link ReplylessPublisherOptions.confirmTimeoutMs} (a stalled
 * network: the connection is then reopened), every unconfirmed message goes to `resend`, so a
 * message may arrive twice but never not at all while Redis is reachable.
 *
 * Where Redis refuses `CLIENT REPLY` (an ACL user without it), the publisher says so once to
 * `onError`, closes its connection and declines every message: they all go the counted way.
 *
 * The connection is a duplicate of `source` (standalone or Sentinel; not a Cluster, whose
 * PUBLISH would not reach a sharded subscriber) opened at construction, without an offline
 * queue and without re-sending commands after a reconnect, so nothing of ioredis's waits behind
 * the raw writes.
 */
export class ReplylessPublisher {
  private readonly redis: StandaloneRedis;
  private readonly confirmAfterMs: number;
  private readonly confirmTimeoutMs: number;
  /**
   * `off`: Redis does not answer, writes go straight out. `refused`: Redis refused `CLIENT REPLY`
   * (an ACL without it), so this publisher declines every message for good.
   */
  private state: 'connecting' | 'off' | 'confirming' | 'refused' | 'closed' = 'connecting';
  /** Written since the last confirmation started, `[channel, payload]` pairs. */
  private written: string[] = [];
  /** Written before the confirmation under way. */
  private confirming: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Bumped when the connection drops, so a late confirmation of an older one is ignored. */
  private epoch = 0;

  constructor(
    source: Redis,
    private readonly options: ReplylessPublisherOptions,
  ) {
    if (source.isCluster) throw new TypeError('ReplylessPublisher needs a standalone connection');
    this.confirmAfterMs = options.confirmAfterMs ?? 1_000;
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 3_000;
    this.redis = duplicateRedis(source, {
      connectionName: options.name,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      enableAutoPipelining: false,
      commandTimeout: undefined,
    }) as StandaloneRedis;
    this.redis.on('error', options.onError ?? (() => undefined));
    this.redis.on('ready', () => {
      const epoch = this.epoch;
      // `ON` first: it checks that this user may send `CLIENT REPLY` (an error would be answered
      // even to `OFF`, and ioredis would take it for a reply to nothing).
      this.redis.call('CLIENT', 'REPLY', 'ON').then(
        () => {
          if (epoch !== this.epoch || this.state !== 'connecting') return;
          this.redis.stream.write(REPLY_OFF);
          this.state = 'off';
        },
        (err: unknown) => this.refuseIfRefused(err),
      );
    });
    this.redis.on('close', () => this.lost());
  }

  /** Messages written and not confirmed by Redis yet. */
  get unconfirmed(): number {
    return (this.written.length + this.confirming.length) / 2;
  }

  /** Writes `PUBLISH channel payload`; false (nothing written) when it cannot right now. */
  publish(channel: string, payload: string): boolean {
    if (this.state !== 'off' || !this.redis.stream.writable) return false;
    this.redis.stream.write(
      `*3\r\n$7\r\nPUBLISH\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n` +
        `$${Buffer.byteLength(payload)}\r\n${payload}\r\n`,
    );
    this.written.push(channel, payload);
    this.timer ??= setTimeout(() => this.confirm(), this.confirmAfterMs).unref();
    return true;
  }

  /** Confirms what was written, then closes the connection. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.timer);
    if (this.redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.redis.call('CLIENT', 'REPLY', 'ON').catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, this.confirmTimeoutMs))),
      ]);
      clearTimeout(timer);
    }
    this.written = [];
    this.confirming = [];
    this.redis.disconnect();
  }

  private confirm(): void {
    this.timer = undefined;
    if (this.state !== 'off') return;
    this.state = 'confirming';
    this.confirming = this.written;
    this.written = [];
    const epoch = this.epoch;
    // Reopened when silent: 'close' then hands what is unconfirmed to `resend`.
    const silent = setTimeout(() => {
      if (epoch === this.epoch && this.state === 'confirming') this.redis.disconnect(true);
    }, this.confirmTimeoutMs).unref();
    this.redis.call('CLIENT', 'REPLY', 'ON').then(
      () => {
        clearTimeout(silent);
        if (epoch !== this.epoch || this.state !== 'confirming') return;
        this.confirming = [];
        this.redis.stream.write(REPLY_OFF);
        this.state = 'off';
      },
      (err: unknown) => {
        clearTimeout(silent);
        // Refused or dropped: either way the connection closes, and 'close' resends.
        this.refuseIfRefused(err);
      },
    );
  }

  /** Declines every message from now on when Redis refused the command (not a dropped link). */
  private refuseIfRefused(err: unknown): boolean {
    if (!(err instanceof Error) || err.name !== 'ReplyError' || this.state === 'closed') {
      return false;
    }
    this.state = 'refused';
    this.options.onError?.(new Error(`replies are published counted: ${err.message}`));
    this.redis.disconnect();
    return true;
  }

  /** The connection dropped: whatever was not confirmed is sent again the counted way. */
  private lost(): void {
    this.epoch++;
    clearTimeout(this.timer);
    this.timer = undefined;
    const unconfirmed = [...this.confirming, ...this.written];
    this.confirming = [];
    this.written = [];
    if (this.state === 'closed') return;
    if (this.state !== 'refused') this.state = 'connecting';
    for (let i = 0; i < unconfirmed.length; i += 2) {
      this.options.resend(unconfirmed[i]!, unconfirmed[i + 1]!);
    }
  }
}

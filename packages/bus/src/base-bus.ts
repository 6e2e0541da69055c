import { randomBytes } from 'node:crypto';
import type { Bus, BusHandler, RequestOptions, Responder, Subscription } from './bus.js';
import { decodeEnvelope, encodeEnvelope, topicKey, type Envelope, type Topic } from './envelope.js';
import {
  BusClosedError,
  BusError,
  BusHandlerError,
  BusMalformedMessageError,
  BusNoResponderError,
  BusRemoteError,
} from './errors.js';
import { KeptReplies } from './kept-replies.js';
import { PendingRequests } from './pending-requests.js';
import { RecentKeys } from './recent-keys.js';

export interface BusOptions {
  /** This node's id; unique among live nodes, since replies are addressed by it. @default 16 random hex digits */
  nodeId?: string;
  /**
   * Receives what the bus drops instead of throwing: malformed payloads, errors thrown by
   * subscribers, failed replies and transport errors. @default process.emitWarning
   */
  onError?: (err: Error) => void;
}

/** A fresh node id: 16 hex digits, unique enough among the nodes of one deployment. */
export function randomNodeId(): string {
  return randomBytes(8).toString('hex');
}

type Listener = (envelope: Envelope) => void;

/** How long a reply that reached no subscriber is published again (see `sendReply`). */
const REPLY_RETRY_MS = 5_000;

/**
 * Characters of replies sent without a receiver count that a node keeps to send again on
 * request (see {@link KeptReplies}); past it the oldest are forgotten early.
 */
const KEPT_REPLY_CHARS = 32 * 1024 * 1024;

/** Request ids remembered per node to drop a request delivered twice. */
const RECENT_REQUESTS = 10_000;

interface TopicState {
  readonly listeners: Set<Listener>;
  readonly ready: Promise<void>;
}

/**
 * Everything a bus does except moving bytes: envelopes, subscription bookkeeping, request/reply
 * with correlation ids and deadlines, fail-fast on zero receivers, and shutdown. Adapters only
 * implement the four `transport*` methods and call {@link receive} for every incoming payload,
 * so both adapters share one behaviour and one contract suite.
 *
 * Transport requirement: `transportPublish` resolves to the number of *nodes* subscribed to the
 * topic, and `transportSubscribe`/`transportUnsubscribe` take effect in call order.
 */
export abstract class BaseBus implements Bus {
  readonly nodeId: string;
  protected readonly reportError: (err: Error) => void;
  private readonly topics = new Map<string, TopicState>();
  private readonly responders = new Set<string>();
  private readonly pending = new PendingRequests();
  private readonly answered = new RecentKeys(RECENT_REQUESTS);
  private readonly kept = new KeptReplies(REPLY_RETRY_MS, KEPT_REPLY_CHARS);
  /**
   * Set by a transport that tells when this node's inbox resubscribed (it then calls
   * {@link inboxResubscribed}): its requests say so (`ag`), and their responders may reply
   * without a receiver count.
   */
  protected asksAgain = false;
  private inbox: Promise<Subscription> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(options: BusOptions) {
    this.nodeId = options.nodeId ?? randomNodeId();
    this.reportError = options.onError ?? ((err) => process.emitWarning(err));
  }

  protected abstract transportPublish(topic: Topic, payload: string): Promise<number>;
  protected abstract transportSubscribe(topic: Topic): Promise<void>;
  protected abstract transportUnsubscribe(topic: Topic): Promise<void>;
  protected abstract transportClose(): Promise<void>;

  /**
   * Publishes without waiting for the receiver count, when the transport can right now: then it
   * returns true and guarantees the payload reaches Redis (re-sending it counted if need be),
   * but not that anyone received it. @returns false: publish the counted way instead.
   */
  protected transportPublishUncounted(_topic: Topic, _payload: string): boolean {
    return false;
  }

  /**
   * Called by the transport when this node's inbox is subscribed again after its connection was
   * lost: replies published meanwhile reached nobody, so each responder is asked for the
   * replies to the requests still waiting, and sends again those it kept.
   */
  protected inboxResubscribed(): void {
    if (this.closed) return;
    for (const [channel, ids] of this.pending.idsByChannel()) {
      const payload = encodeEnvelope({ v: 1, k: 'again', from: this.nodeId, ids });
      // Repeated until heard: the responders' subscribers may be reconnecting too.
      void this.publishUntilHeard({ kind: 'req', name: channel }, payload);
    }
  }

  /** Publishes again, counted and repeated, a reply the transport could not confirm. */
  protected resendReply(to: string, payload: string): void {
    if (!this.closed) void this.sendReply(to, payload);
  }

  /** Called by the transport for every payload; drops what nobody here listens to any more. */
  protected receive(topic: Topic, payload: string): void {
    const state = this.topics.get(topicKey(topic));
    if (!state || this.closed) return;
    const envelope = decodeEnvelope(topic, payload);
    if (typeof envelope === 'string') {
      this.reportError(
        new BusMalformedMessageError(topicKey(topic), envelope, payload.slice(0, 200)),
      );
      return;
    }
    for (const listener of [...state.listeners]) listener(envelope);
  }

  async publish(channel: string, message: unknown): Promise<number> {
    this.assertOpen(channel);
    const payload = encodeEnvelope({ v: 1, k: 'msg', from: this.nodeId, body: message });
    return this.guard(this.transportPublish({ kind: 'pub', name: channel }, payload));
  }

  async subscribe(channel: string, handler: BusHandler): Promise<Subscription> {
    this.assertOpen(channel);
    return this.listen({ kind: 'pub', name: channel }, (envelope) => {
      if (envelope.k !== 'msg') return;
      this.runHandler(channel, () => handler(envelope.body, { channel, from: envelope.from }));
    });
  }

  /** One responder per channel and node: a second `respond` on the same node rejects. */
  async respond(channel: string, responder: Responder): Promise<Subscription> {
    this.assertOpen(channel);
    if (this.responders.has(channel)) {
      throw new BusError('BUS_ALREADY_RESPONDING', `this node already responds on "${channel}"`);
    }
    this.responders.add(channel);
    let subscription: Subscription;
    try {
      subscription = await this.listen({ kind: 'req', name: channel }, (envelope) => {
        if (envelope.k === 'again') return this.answerAgain(envelope.from, envelope.ids);
        if (envelope.k !== 'req') return;
        // At most once per request: a duplicate delivery is dropped (see RecentKeys).
        if (this.answered.seen(`${envelope.from}:${envelope.id}`)) return;
        void this.answer(channel, responder, envelope);
      });
    } catch (err) {
      this.responders.delete(channel);
      throw err;
    }
    let active = true;
    return {
      unsubscribe: async () => {
        if (!active) return;
        active = false;
        this.responders.delete(channel);
        await subscription.unsubscribe();
      },
    };
  }

  async request(channel: string, message: unknown, options: RequestOptions): Promise<unknown> {
    this.assertOpen(channel);
    const { timeoutMs, signal, trace } = options;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new RangeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    signal?.throwIfAborted();
    const { id, result } = this.pending.open(channel, timeoutMs, signal);
    try {
      const ag = this.asksAgain ? 1 : undefined;
      const payload = encodeEnvelope(
        trace
          ? { v: 1, k: 'req', from: this.nodeId, id, body: message, tc: trace, ag }
          : { v: 1, k: 'req', from: this.nodeId, id, body: message, ag },
      );
      void this.sendRequest(channel, payload, id);
    } catch (err) {
      this.pending.reject(id, err);
    }
    return result;
  }

  close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.pending.rejectAll(() => new BusClosedError());
    this.kept.clear();
    this.topics.clear();
    this.responders.clear();
    await this.transportClose();
  }

  private async sendRequest(channel: string, payload: string, id: string): Promise<void> {
    try {
      await this.ensureInbox();
      if (this.pending.channelOf(id) === undefined) return;
      const nodes = await this.transportPublish({ kind: 'req', name: channel }, payload);
      if (nodes === 0) this.pending.reject(id, new BusNoResponderError(channel));
    } catch (err) {
      this.pending.reject(id, this.closed ? new BusClosedError() : err);
    }
  }

  private ensureInbox(): Promise<Subscription> {
    if (!this.inbox) {
      const inbox = this.listen({ kind: 'inbox', name: this.nodeId }, (e) => this.onReply(e));
      inbox.catch(() => {
        if (this.inbox === inbox) this.inbox = undefined;
      });
      this.inbox = inbox;
    }
    return this.inbox;
  }

  private onReply(envelope: Envelope): void {
    if (envelope.k !== 'res' && envelope.k !== 'err') return;
    const channel = this.pending.channelOf(envelope.id);
    if (channel === undefined) return;
    if (envelope.k === 'res') this.pending.resolve(envelope.id, envelope.body);
    else {
      const { code, message, from } = envelope;
      this.pending.reject(envelope.id, new BusRemoteError(channel, code, message, from));
    }
  }

  private async answer(channel: string, responder: Responder, req: Envelope & { k: 'req' }) {
    let reply: Envelope;
    try {
      const meta = req.tc
        ? { channel, from: req.from, trace: req.tc }
        : { channel, from: req.from };
      const body: unknown = await responder(req.body, meta);
      reply = { v: 1, k: 'res', from: this.nodeId, id: req.id, body };
    } catch (err) {
      reply = { v: 1, k: 'err', from: this.nodeId, id: req.id, ...describeError(err) };
    }
    if (this.closed) return;
    let payload: string;
    try {
      payload = encodeEnvelope(reply);
    } catch (err) {
      const { message } = describeError(err);
      const code = 'BUS_REPLY_NOT_JSON';
      payload = encodeEnvelope({ v: 1, k: 'err', from: this.nodeId, id: req.id, code, message });
    }
    // The requester asks again for a reply its inbox missed, so no receiver count is needed.
    if (
      req.ag === 1 &&
      this.transportPublishUncounted({ kind: 'inbox', name: req.from }, payload)
    ) {
      this.kept.keep(`${req.from}:${req.id}`, payload);
      return;
    }
    await this.sendReply(req.from, payload);
  }

  /** Sends again the kept replies to `from`'s requests `ids` (see {@link inboxResubscribed}). */
  private answerAgain(from: string, ids: readonly string[]): void {
    for (const id of ids) {
      const payload = this.kept.get(`${from}:${id}`);
      if (payload !== undefined) void this.sendReply(from, payload);
    }
  }

  /**
   * Publishes a reply to the requester's inbox, counted: for a requester that does not ask
   * again (see {@link answer}), a reply asked for again, and one the transport could not
   * confirm. One that reached no subscriber is published
   * again, after 50 ms and then twice as long each time, the last time at {@link REPLY_RETRY_MS}: the
   * requester's subscriber may be reconnecting (Redis dropped its connections, or restarted)
   * and Redis pub/sub keeps nothing for a channel nobody listens to, so the caller would wait
   * out its deadline for an answer its node gave. The requester takes the first copy that
   * reaches it and drops any other (its pending entry is gone); a requester that is gone for
   * good costs a few publishes.
   */
  private sendReply(to: string, payload: string): Promise<void> {
    return this.publishUntilHeard({ kind: 'inbox', name: to }, payload);
  }

  /**
   * Publishes until at least one node receives it, for at most {@link REPLY_RETRY_MS} (see
   * {@link sendReply}).
   */
  private async publishUntilHeard(topic: Topic, payload: string): Promise<void> {
    const giveUpAt = Date.now() + REPLY_RETRY_MS;
    for (let delay = 50; ; delay *= 2) {
      try {
        if ((await this.transportPublish(topic, payload)) > 0) return;
      } catch (err) {
        if (!this.closed) this.reportError(asError(err));
        return;
      }
      const left = giveUpAt - Date.now();
      if (this.closed || left <= 0) return;
      // The last wait is cut short, so the last copy goes out at the end of the window.
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)).unref());
      if (this.closed) return;
    }
  }

  /** Adds a listener to a topic, subscribing the transport for the first one. */
  private async listen(topic: Topic, listener: Listener): Promise<Subscription> {
    const key = topicKey(topic);
    let state = this.topics.get(key);
    if (!state) {
      state = { listeners: new Set(), ready: this.transportSubscribe(topic) };
      this.topics.set(key, state);
    }
    const current = state;
    current.listeners.add(listener);
    const remove = (): boolean => {
      current.listeners.delete(listener);
      if (current.listeners.size > 0 || this.topics.get(key) !== current) return false;
      this.topics.delete(key);
      return true;
    };
    try {
      await current.ready;
    } catch (err) {
      remove();
      throw this.closed ? new BusClosedError() : err;
    }
    if (this.closed) throw new BusClosedError();
    let active = true;
    return {
      unsubscribe: async () => {
        if (!active) return;
        active = false;
        if (remove() && !this.closed) await this.guard(this.transportUnsubscribe(topic));
      },
    };
  }

  private runHandler(channel: string, call: () => unknown): void {
    try {
      const result = call();
      if (result instanceof Promise) {
        result.catch((err: unknown) => this.reportError(new BusHandlerError(channel, err)));
      }
    } catch (err) {
      this.reportError(new BusHandlerError(channel, err));
    }
  }

  private assertOpen(channel: string): void {
    if (this.closed) throw new BusClosedError();
    if (typeof channel !== 'string' || channel === '') {
      throw new TypeError('channel must be a non-empty string');
    }
  }

  private async guard<T>(operation: Promise<T>): Promise<T> {
    try {
      return await operation;
    } catch (err) {
      throw this.closed ? new BusClosedError() : err;
    }
  }
}

function describeError(err: unknown): { code: string; message: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return {
    code: typeof code === 'string' && code !== '' ? code : 'REMOTE_ERROR',
    message: err instanceof Error ? err.message : String(err),
  };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

import type { TraceCarrier } from './envelope.js';

/**
 * The bus port: publish/subscribe between processes, and request/reply with deadlines on top.
 *
 * In the contract:
 * - A message is JSON: it arrives as `JSON.parse(JSON.stringify(message))` would return it
 *   (dates become strings, `undefined` fields vanish); a message JSON cannot encode (BigInt,
 *   cycles) makes `publish`/`request` reject with a `TypeError`. A `RawJson` message (or a
 *   responder's `RawJson` reply) is JSON text sent as it is: it arrives as `JSON.parse(text)`
 *   would return it. It reaches every live subscription of its channel on every node (the
 *   publishing node included) at most once; per channel and publisher, in order.
 * - `publish` resolves to the number of nodes that received it (a node with several
 *   subscriptions counts once); 0 means nobody is listening, and callers that need an answer
 *   fail fast on it instead of waiting for a deadline.
 * - `request` always settles: with the first reply, with {@link BusNoResponderError} when no
 *   node responds on the channel (plain subscribers do not count), with {@link BusTimeoutError}
 *   at the deadline, with {@link BusRemoteError} when the responder threw (carrying its `code`
 *   and `message`), with the signal's reason on abort, or with {@link BusClosedError} on close.
 *   When several nodes respond on a channel, each of them handles the request and the first
 *   reply wins: use the job queue, not the bus, to hand work to exactly one worker.
 * - A node has at most one responder per channel; a second `respond` rejects with a
 *   `BusError` coded `BUS_ALREADY_RESPONDING` until the first is unsubscribed.
 * - Malformed payloads that arrive from outside, and errors thrown by subscribers, are dropped
 *   and reported to the adapter's `onError` option, never thrown into a subscriber or publisher.
 * - After `close()` every method rejects with {@link BusClosedError}; `close()` is idempotent;
 *   `unsubscribe()` of a closed bus's subscription resolves and does nothing.
 *
 * Not in the contract: delivery of messages published while a node is disconnected from the
 * transport (Redis pub/sub is at-most-once), ordering across channels or publishers.
 *
 * @see {@link BusTimeoutError} and the other errors in `errors.ts`, which carry stable `code`s.
 */
export interface Bus {
  /** This node's id on the bus; replies and node-addressed messages use it. */
  readonly nodeId: string;
  publish(channel: string, message: unknown): Promise<number>;
  subscribe(channel: string, handler: BusHandler): Promise<Subscription>;
  /** Sends `message` to the responder of `channel` and waits for its answer until the deadline. */
  request(channel: string, message: unknown, options: RequestOptions): Promise<unknown>;
  /** Answers requests on `channel`; the handler's return value (or thrown error) is the reply. */
  respond(channel: string, handler: Responder): Promise<Subscription>;
  close(): Promise<void>;
}

export interface BusMessageMeta {
  readonly channel: string;
  /** `nodeId` of the publisher. */
  readonly from: string;
  /** The requester's W3C trace context ({@link RequestOptions.trace}); requests only. */
  readonly trace?: TraceCarrier;
}

/** May be async; a rejection is reported to `onError` like a throw. */
export type BusHandler = (message: unknown, meta: BusMessageMeta) => void;
/** May be async; the resolved value is the reply, a throw or rejection the remote error. */
export type Responder = (message: unknown, meta: BusMessageMeta) => unknown;

export interface Subscription {
  /** Idempotent. */
  unsubscribe(): Promise<void>;
}

export interface RequestOptions {
  /**
   * Deadline in milliseconds, positive (else the request rejects with a `RangeError`).
   * Required: a request without a deadline could hang a caller forever.
   */
  timeoutMs: number;
  /** Aborts the wait; the request rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * The caller's W3C trace context (`traceparent`, `tracestate`), carried in the envelope to the
   * responder's {@link BusMessageMeta.trace}, so a trace continues across replicas. The bus
   * itself does not trace.
   */
  trace?: TraceCarrier;
}

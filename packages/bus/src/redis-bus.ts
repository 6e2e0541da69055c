import {
  closeRedis,
  createRedis,
  redisKeys,
  ReplylessPublisher,
  sendNow,
  type Redis,
  type RedisKeys,
} from '@agent-backend/redis';
import type { Bus } from './bus.js';
import { BaseBus, randomNodeId, type BusOptions } from './base-bus.js';
import type { Topic } from './envelope.js';

/** Connections handed to the bus; it does not close them. */
export interface RedisBusConnections {
  /** Used for PUBLISH only; may be shared with other non-subscriber uses. */
  publisher: Redis;
  /**
   * Dedicated to this bus node: PUBLISH counts subscribed *connections*, so one subscriber
   * connection per node is what turns that count into a count of nodes.
   */
  subscriber: Redis;
}

export type RedisBusOptions = BusOptions & {
  /** Key and channel prefix, see `redisKeys`. @default 'ab:' */
  prefix?: string;
} & ({ url: string } | RedisBusConnections);

/**
 * Moves bus payloads through Redis pub/sub. Each node holds one publisher and one subscriber
 * connection and subscribes each Redis channel at most once (the base class reference-counts
 * local subscriptions), so PUBLISH's receiver count is exactly the number of bus nodes
 * listening, which the base class relies on to fail fast.
 *
 * ioredis resubscribes after a reconnect; payloads published meanwhile are lost (pub/sub is
 * at-most-once) and PUBLISH reports the node as absent until it is back.
 *
 * On a Redis Cluster (a `Cluster` subscriber) the bus uses sharded pub/sub: `SPUBLISH` goes to
 * the master owning the channel's slot and `SSUBSCRIBE` to the same master (the subscriber must
 * be opened with `shardedSubscriber`: one connection per master, which ioredis moves along with
 * slot migrations and failovers). Plain `PUBLISH` would reach every node but count only the
 * subscribers of the node it was sent to, which breaks the receiver count.
 *
 * Replies go without a receiver count where the requester asks again for a reply its inbox
 * missed (not on a Cluster): on a connection of their own that Redis does not answer
 * (`bus-reply:<nodeId>`, a {@link ReplylessPublisher} duplicated from the publisher, opened at
 * the first such reply), so a responder is not woken by one answer per reply. When the
 * subscriber connection is back after a drop, the bus subscribes its inbox again and asks its
 * responders for the replies it still waits for (see `BaseBus.inboxResubscribed`).
 */
class RedisBus extends BaseBus {
  private readonly subscribed = new Map<string, Topic>();
  private readonly onMessage = (channel: string, payload: string): void => {
    const topic = this.subscribed.get(channel);
    if (topic) this.receive(topic, payload);
  };
  /** Sharded pub/sub on a Cluster (see {@link createRedisBus}). */
  private readonly sharded: boolean;
  /** Replies without a receiver count (not on a Cluster), opened at the first. */
  private replies: ReplylessPublisher | undefined;
  private readonly inboxPrefix: string;
  /** The subscriber connection was ready before: a later 'ready' is a reconnect. */
  private subscriberWasReady = false;
  private readonly onSubscriberReady = (): void => {
    const again = this.subscriberWasReady;
    this.subscriberWasReady = true;
    const inbox = this.keys.busInbox(this.nodeId);
    if (!again || !this.subscribed.has(inbox)) return;
    // Subscribed before ioredis's own resubscription goes out; its answer means the inbox is
    // back, so whatever is asked for now reaches it.
    this.connections.subscriber.subscribe(inbox).then(
      () => this.inboxResubscribed(),
      () => undefined, // dropped again: the next 'ready' asks
    );
  };

  constructor(
    private readonly connections: RedisBusConnections,
    private readonly keys: RedisKeys,
    private readonly owned: boolean,
    options: BusOptions,
  ) {
    super(options);
    this.sharded = connections.subscriber.isCluster;
    this.asksAgain = !this.sharded;
    this.inboxPrefix = keys.busInbox('');
    connections.subscriber.on(this.sharded ? 'smessage' : 'message', this.onMessage);
    if (!this.sharded) {
      this.subscriberWasReady = connections.subscriber.status === 'ready';
      connections.subscriber.on('ready', this.onSubscriberReady);
    }
  }

  protected override transportPublishUncounted(topic: Topic, payload: string): boolean {
    if (this.sharded || this.connections.publisher.isCluster) return false;
    this.replies ??= new ReplylessPublisher(this.connections.publisher, {
      name: `bus-reply:${this.nodeId}`,
      onError: this.reportError,
      resend: (channel, lost) => this.resendReply(channel.slice(this.inboxPrefix.length), lost),
    });
    return this.replies.publish(this.channelOf(topic), payload);
  }

  protected override async transportPublish(topic: Topic, payload: string): Promise<number> {
    const channel = this.channelOf(topic);
    // At once, not deferred by the connection's auto-pipeline (see sendNow).
    return Number(
      await sendNow(
        this.connections.publisher,
        this.sharded ? 'spublish' : 'publish',
        [channel, payload],
        { everyCommand: true },
      ),
    );
  }

  protected override async transportSubscribe(topic: Topic): Promise<void> {
    const channel = this.channelOf(topic);
    this.subscribed.set(channel, topic);
    const { subscriber } = this.connections;
    await (this.sharded ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel));
  }

  protected override async transportUnsubscribe(topic: Topic): Promise<void> {
    const channel = this.channelOf(topic);
    this.subscribed.delete(channel);
    const { subscriber } = this.connections;
    await (this.sharded ? subscriber.sunsubscribe(channel) : subscriber.unsubscribe(channel));
  }

  protected override async transportClose(): Promise<void> {
    const { publisher, subscriber } = this.connections;
    subscriber.off(this.sharded ? 'smessage' : 'message', this.onMessage);
    subscriber.off('ready', this.onSubscriberReady);
    await this.replies?.close();
    const channels = [...this.subscribed.keys()];
    this.subscribed.clear();
    if (this.owned) {
      await Promise.all([closeRedis(publisher), closeRedis(subscriber)]);
    } else if (channels.length > 0) {
      // Sharded: one command per channel, channels of different slots live on different nodes.
      const unsubscribed = this.sharded
        ? Promise.all(channels.map((channel) => subscriber.sunsubscribe(channel)))
        : subscriber.unsubscribe(...channels);
      await unsubscribed.catch((err: unknown) => {
        this.reportError(err instanceof Error ? err : new Error(String(err)));
      });
    }
  }

  private channelOf(topic: Topic): string {
    switch (topic.kind) {
      case 'pub':
        return this.keys.busChannel(topic.name);
      case 'req':
        return this.keys.busRequests(topic.name);
      case 'inbox':
        return this.keys.busInbox(topic.name);
    }
  }
}

/**
 * The distributed bus: used when `REDIS_URL` is set. With `url`, the bus opens (and on close,
 * quits) its two connections, named `bus-pub:<nodeId>` and `bus-sub:<nodeId>`, and reports their
 * connection errors to `onError`. Either way it opens, at its first reply without a receiver
 * count, and closes a reply connection of its own (`bus-reply:<nodeId>`; not on a Cluster).
 */
export function createRedisBus(options: RedisBusOptions): Bus {
  const { prefix, nodeId, onError } = options;
  const keys = redisKeys(prefix);
  if (!('publisher' in options)) {
    const base = { nodeId: nodeId ?? randomNodeId(), onError };
    const report = onError ?? ((err: Error) => process.emitWarning(err));
    const open = (role: 'pub' | 'sub') =>
      createRedis(options.url, {
        name: `bus-${role}:${base.nodeId}`,
        onError: report,
        ...(role === 'sub' ? { shardedSubscriber: true } : {}),
      });
    const connections = { publisher: open('pub'), subscriber: open('sub') };
    return new RedisBus(connections, keys, true, base);
  }
  const { publisher, subscriber } = options;
  return new RedisBus({ publisher, subscriber }, keys, false, { nodeId, onError });
}

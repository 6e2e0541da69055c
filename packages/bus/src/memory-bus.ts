import type { Bus } from './bus.js';
import { BaseBus, type BusOptions } from './base-bus.js';
import { topicKey, type Topic } from './envelope.js';

/** What the hub needs from a node: a way to hand it a payload. */
interface HubClient {
  deliver(topic: Topic, payload: string): void;
}

/**
 * The in-process stand-in for the Redis server: routes payloads between the bus nodes of one
 * process. Several nodes on one hub behave like several replicas on one Redis (tests use it
 * to run a cluster in one process); the all-in-one server uses one node on its own hub.
 *
 * Delivery is asynchronous (a microtask later) and payloads stay strings, so code that works
 * here does not rely on anything Redis would not give it: no synchronous re-entrancy, no
 * shared object references.
 */
export class MemoryHub {
  private readonly subscribers = new Map<string, Set<HubClient>>();

  /** @returns the number of nodes the payload will reach (Redis PUBLISH semantics). */
  publish(topic: Topic, payload: string): number {
    const clients = this.subscribers.get(topicKey(topic));
    if (!clients) return 0;
    for (const client of clients) queueMicrotask(() => client.deliver(topic, payload));
    return clients.size;
  }

  /**
   * Test hook: delivers a raw string to the subscribers of bus channel `channel` as if a node
   * had published it, bypassing encoding (e.g. to check malformed payloads are dropped).
   */
  injectRaw(channel: string, payload: string, kind: Topic['kind'] = 'pub'): number {
    return this.publish({ kind, name: channel }, payload);
  }

  subscribe(topic: Topic, client: HubClient): void {
    const key = topicKey(topic);
    const clients = this.subscribers.get(key) ?? new Set();
    clients.add(client);
    this.subscribers.set(key, clients);
  }

  unsubscribe(topic: Topic, client: HubClient): void {
    const key = topicKey(topic);
    const clients = this.subscribers.get(key);
    clients?.delete(client);
    if (clients?.size === 0) this.subscribers.delete(key);
  }

  /** Removes a node from every topic (its close). */
  detach(client: HubClient): void {
    for (const [key, clients] of this.subscribers) {
      clients.delete(client);
      if (clients.size === 0) this.subscribers.delete(key);
    }
  }
}

/** A hub for in-process bus nodes; share one between nodes that should hear each other. */
export function createMemoryHub(): MemoryHub {
  return new MemoryHub();
}

export interface MemoryBusOptions extends BusOptions {
  /** The hub connecting this node to others. @default a new hub: a lone node */
  hub?: MemoryHub;
}

class MemoryBus extends BaseBus implements HubClient {
  constructor(
    private readonly hub: MemoryHub,
    options: BusOptions,
  ) {
    super(options);
  }

  deliver(topic: Topic, payload: string): void {
    this.receive(topic, payload);
  }

  protected override async transportPublish(topic: Topic, payload: string): Promise<number> {
    return this.hub.publish(topic, payload);
  }

  protected override async transportSubscribe(topic: Topic): Promise<void> {
    this.hub.subscribe(topic, this);
  }

  protected override async transportUnsubscribe(topic: Topic): Promise<void> {
    this.hub.unsubscribe(topic, this);
  }

  protected override async transportClose(): Promise<void> {
    this.hub.detach(this);
  }
}

/** The embedded bus: used when `REDIS_URL` is unset, and by tests that need several nodes. */
export function createMemoryBus(options: MemoryBusOptions = {}): Bus {
  const { hub = createMemoryHub(), ...rest } = options;
  return new MemoryBus(hub, rest);
}

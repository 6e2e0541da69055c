import type { Bus, Subscription } from '@agent-backend/bus';
import { userWebChannel } from '@agent-backend/node-rpc';
import { ServerMessage } from '@agent-backend/protocol';
import type { LocalRegistry } from './local-registry.js';

/**
 * One bus subscription per user with web connections on this replica: messages published to
 * the user's web channel by any replica reach this replica's web connections of that user.
 */
export class WebSubscriptions {
  private readonly subscriptions = new Map<string, Promise<Subscription>>();

  constructor(
    private readonly bus: Bus,
    private readonly registry: LocalRegistry,
  ) {}

  /** Subscribes to the user's channel (first connection here); resolves once subscribed. */
  subscribe(userId: string): Promise<Subscription> {
    let subscription = this.subscriptions.get(userId);
    if (!subscription) {
      subscription = this.bus.subscribe(userWebChannel(userId), (message) => {
        const parsed = ServerMessage.safeParse(message);
        if (!parsed.success) return;
        for (const conn of this.registry.webOf(userId))
          if (conn.wants(parsed.data)) conn.send(parsed.data);
      });
      this.subscriptions.set(userId, subscription);
    }
    return subscription;
  }

  /** Drops the user's subscription (last connection here gone), without waiting. */
  unsubscribe(userId: string): void {
    void this.remove(userId).catch(() => {});
  }

  /** Drops every subscription. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.subscriptions.keys()].map((userId) => this.remove(userId)));
  }

  private async remove(userId: string): Promise<void> {
    const subscription = this.subscriptions.get(userId);
    this.subscriptions.delete(userId);
    await (await subscription)?.unsubscribe();
  }
}

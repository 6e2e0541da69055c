import type { Limits, SlotDecision } from '@agent-backend/limits';

type SlotDecisionHeld = Extract<SlotDecision, { granted: true }>;
import type { Logger } from '@agent-backend/logger';
import type { ConnectionIdentity } from './connection-identity.js';

/** What a connection's slot decided: held (with what gives it back), or not. */
export type ConnectionSlot =
  | { readonly held: true; release(closeCode: number): Promise<void> }
  | { readonly held: false; readonly reason: 'too_many' | 'limits_unavailable' };

export interface ConnectionSlotOptions {
  readonly limits: Limits;
  readonly replicaId: string;
  /** `MAX_NODE_CONNECTIONS_PER_USER` (extension and desktop together); 0: no limit. */
  readonly maxNode: number;
  /** `MAX_WEB_CONNECTIONS_PER_USER`; 0: no limit. */
  readonly maxWeb: number;
  /** `LIMITS_ON_REDIS_ERROR` is `open`. */
  readonly failOpen: boolean;
  /**
   * Close codes of a node connection that leaves the node to a newer one of the same node
   * (replaced, or refused as stale): that one holds the slot now.
   */
  readonly keptByNewer: readonly number[];
  readonly logger: Logger;
  onRefused(limit: string): void;
}

/**
 * Per-user connection slots of the gateway (docs/limits.md), shared by every gateway replica
 * through the limits store, leased so a killed replica's slots come back within
 * `RUN_SLOT_LEASE_MS`. A node's slot is held under its node id: the same node connecting again
 * (a reconnect before the old socket is noticed gone) takes the slot it already has, and the old
 * connection, closed as replaced, leaves it to the new one. A web client's slot is its
 * connection's own.
 */
export function connectionSlots(options: ConnectionSlotOptions) {
  const { limits, logger } = options;
  let seq = 0;
  /**
   * A node's acquisitions on this replica, by user and holder: the connections open, and the
   * latest acquisition's decision, the one the store honours (an earlier one's frees nothing). A
   * stale connection refused late (4011) acquired after the node's live one, so the live one
   * frees the slot with the stale one's decision when it closes.
   */
  const nodes = new Map<string, { open: number; latest: SlotDecisionHeld }>();
  return async (identity: ConnectionIdentity): Promise<ConnectionSlot> => {
    const web = identity.kind === 'web';
    const max = web ? options.maxWeb : options.maxNode;
    if (max === 0) return { held: true, release: async () => {} };
    const pool = web ? 'web_connections' : 'node_connections';
    const holder =
      web || !identity.nodeId ? `${options.replicaId}:${++seq}` : `node:${identity.nodeId}`;
    let decision;
    try {
      decision = await limits.acquireSlot(pool, identity.userId, holder, max);
    } catch (error) {
      logger.warn(
        { err: error, limit: pool, failOpen: options.failOpen },
        'limits cannot be checked',
      );
      if (options.failOpen) return { held: true, release: async () => {} };
      options.onRefused(pool);
      return { held: false, reason: 'limits_unavailable' };
    }
    if (!decision.granted) {
      options.onRefused(pool);
      return { held: false, reason: 'too_many' };
    }
    const free = (release: () => Promise<void>) =>
      release().catch((error: unknown) =>
        logger.warn({ err: error, pool }, 'slot release failed; its lease will free it'),
      );
    if (web) return { held: true, release: () => free(decision.release) };
    const id = `${identity.userId}\n${holder}`;
    const node = nodes.get(id) ?? { open: 0, latest: decision };
    node.open += 1;
    node.latest = decision;
    nodes.set(id, node);
    return {
      held: true,
      release: async (closeCode) => {
        node.open -= 1;
        const last = node.open === 0;
        if (last && nodes.get(id) === node) nodes.delete(id);
        if (options.keptByNewer.includes(closeCode)) {
          // A newer connection of the node holds the slot: here, it frees it; on another
          // replica, that one renews it, and this one stops (else it would keep the slot of a
          // node whose replica was killed).
          if (last) node.latest.leave();
          return;
        }
        // The node's last connection here frees the latest acquisition, whichever took it.
        await free(last ? node.latest.release : decision.release);
      },
    };
  };
}

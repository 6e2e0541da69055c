import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Logger } from '@agent-backend/logger';
import type { GatewayMetrics } from '@agent-backend/metrics';
import type { Presence } from '@agent-backend/presence';
import type { ConnectionLimits } from './connection.js';
import type { LocalRegistry } from './local-registry.js';
import type { PresenceRefreshes } from './presence-refreshes.js';
import type { WorkflowTracker } from './workflows.js';

/** What every connection of this replica works with. */
export interface GatewayServices {
  readonly replicaId: string;
  readonly bus: Bus;
  readonly presence: Presence;
  readonly ephemeral: EphemeralStore;
  readonly registry: LocalRegistry;
  readonly workflows: WorkflowTracker;
  readonly logger: Logger;
  readonly limits: ConnectionLimits;
  /**
   * A heartbeat, `ping` or WebSocket pong that changes nothing refreshes the node's presence
   * entry only when the last write is at least this old (a third of the entry's TTL,
   * `NODE_SILENT_TIMEOUT_MS`): an idle node's frames come far more often than its entry needs.
   */
  readonly presenceRefreshMs: number;
  /** The refreshes that are due, sent to Redis together. */
  readonly refreshes: PresenceRefreshes;
  /**
   * Tools one node may register (`GATEWAY_MAX_TOOLS_PER_NODE`): a `register` with more is
   * refused, so no node makes every run's tool list and `/node/devices` answer balloon.
   */
  readonly maxToolsPerNode: number;
  /** Connections and frames by endpoint. */
  readonly metrics: GatewayMetrics;
}

import type { Bus } from '@agent-backend/bus';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Logger } from '@agent-backend/logger';
import type { GatewayMetrics } from '@agent-backend/metrics';
import type { Presence } from '@agent-backend/presence';
import type { ConnectionLimits } from './connection.js';
import type { LocalRegistry } from './local-registry.js';
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
  /** Connections and frames by endpoint. */
  readonly metrics: GatewayMetrics;
}

import type { NodeClient, NodeClientOptions } from '../node-client.js';
import type { WebClient, WebClientOptions } from '../web-client.js';
import type { GatewayHarness, HarnessToolCall, HarnessToolOutcome } from './harness.contract.js';

/**
 * How long a reconnect after `dropConnections` may take: a real harness restarts a gateway
 * process, which is slow on a loaded machine.
 */
export const DROP_RECOVERY_MS = 20_000;

/** What each part of the client contract gets from its setup. */
export interface ClientContract {
  /** The gateway under test (set before the first test runs). */
  readonly gateway: GatewayHarness;
  /** Every client a test made; closed after each test. */
  readonly clients: Array<NodeClient | WebClient>;
  /** A reconnect schedule short enough for tests. */
  readonly fast: { initialDelayMs: number; maxDelayMs: number; factor: number; jitter: number };
  /** A fresh user id. */
  user(): string;
  /** A node client of the user (not started), with the demo tools. */
  node(userId: string, options?: Partial<NodeClientOptions>): Promise<NodeClient>;
  /** A web client of the user (not started). */
  web(userId: string, options?: Partial<WebClientOptions>): Promise<WebClient>;
  /** Calls a tool of the user's desktop node through the gateway. */
  call(
    userId: string,
    toolName: string,
    args: Record<string, unknown>,
    extra?: Partial<HarnessToolCall>,
  ): Promise<HarnessToolOutcome>;
}

import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { NodeClient, type NodeClientOptions } from './node-client.js';
import { WebClient, type WebClientOptions } from './web-client.js';
import { demoTools } from './demo-tools.js';
import { randomBytes } from 'node:crypto';
import { describeClose } from './client-contract/close.contract.js';
import type { ClientContract } from './client-contract/context.contract.js';
import type { GatewayHarness, HarnessToolCall } from './client-contract/harness.contract.js';
import { describeReconnection } from './client-contract/reconnection.contract.js';
import { describeRegistration } from './client-contract/registration.contract.js';
import { describeToolCalls } from './client-contract/tool-calls.contract.js';
import { describeWebClient } from './client-contract/web-client.contract.js';

export type {
  GatewayHarness,
  HarnessToolCall,
  HarnessToolOutcome,
  HarnessTools,
} from './client-contract/harness.contract.js';

/** The client behaviour every gateway must support, run against `makeHarness()`. */
export function describeClientContract(
  name: string,
  makeHarness: () => Promise<GatewayHarness>,
): void {
  describe(`node and web clients against ${name}`, () => {
    let gateway: GatewayHarness;
    const clients: Array<NodeClient | WebClient> = [];
    const user = () => `u${randomBytes(4).toString('hex')}`;
    const fast = { initialDelayMs: 50, maxDelayMs: 1_000, factor: 2, jitter: 0 };

    async function node(
      userId: string,
      options: Partial<NodeClientOptions> = {},
    ): Promise<NodeClient> {
      const client = new NodeClient({
        url: gateway.url,
        kind: 'desktop',
        userId,
        token: await gateway.token(userId),
        tools: demoTools(),
        reconnect: fast,
        ...options,
      });
      clients.push(client);
      return client;
    }

    async function web(
      userId: string,
      options: Partial<WebClientOptions> = {},
    ): Promise<WebClient> {
      const client = new WebClient({
        url: gateway.url,
        userId,
        token: await gateway.token(userId),
        reconnect: fast,
        ...options,
      });
      clients.push(client);
      return client;
    }

    const call = (
      userId: string,
      toolName: string,
      args: Record<string, unknown>,
      extra: Partial<HarnessToolCall> = {},
    ) =>
      gateway.callTool({ userId, nodeType: 'desktop', name: toolName, arguments: args, ...extra });

    beforeAll(async () => {
      gateway = await makeHarness();
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });
    afterAll(async () => {
      await gateway.close();
    });

    const contract: ClientContract = {
      get gateway() {
        return gateway;
      },
      clients,
      fast,
      user,
      node,
      web,
      call,
    };
    describeRegistration(contract);
    describeToolCalls(contract);
    describeReconnection(contract);
    describeWebClient(contract);
    describeClose(contract);
  });
}

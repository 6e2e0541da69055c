import { Writable } from 'node:stream';
import { createRedisBus } from '@agent-backend/bus';
import { createLogger } from '@agent-backend/logger';
import { PRESENCE_CHANGES_CHANNEL } from '@agent-backend/node-rpc';
import { createRedisPresence } from '@agent-backend/presence';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { nodeToolsCapability } from '@agent-backend/node-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const url = testRedisUrl();
const testRedis = redisTestKeys('node-tools-capability', { beforeAll, afterAll });
const logger = createLogger({ destination: new Writable({ write: (_c, _e, done) => done() }) });

/**
 * The node tools capability (packages/node-tools) on the service's shared bus and presence (real
 * Redis), as createAgent makes it: the agent's close must end what its caller subscribed.
 */
describe('node tools capability on the shared bus', () => {
  it.each([
    ['without metrics', false],
    ['with metrics (an instrumented caller)', true],
  ])('closing it ends its caller subscription to presence changes (%s)', async (_, metered) => {
    const prefix = testRedis.fresh();
    const bus = createRedisBus({ url, prefix });
    const presence = createRedisPresence({ url, prefix });
    const channel = `${prefix}bus:pub:${PRESENCE_CHANGES_CHANNEL}`;
    const listeners = async () => (await testRedis.raw.pubsub('NUMSUB', channel))[1];
    try {
      const capability = nodeToolsCapability(
        { logger, bus, presence, ...(metered ? { metrics: { call: () => undefined } } : {}) },
        { TOOL_CALL_TIMEOUT_MS: 1_000, AGENT_MAX_TOOL_NODES: 2 },
      );
      // A call (to no node) subscribes the caller's route cache to presence changes.
      const call = { userId: 'u1', nodeType: 'desktop' as const, toolName: 't', arguments: {} };
      await expect(capability.caller.callTool(call)).rejects.toMatchObject({
        code: 'node_not_found',
      });
      expect(await listeners()).toBe(1);
      await capability.close?.();
      // The bus and presence are the service's: still open, with nothing of the capability.
      expect(await listeners()).toBe(0);
    } finally {
      await bus.close();
      await presence.close();
    }
  });
});

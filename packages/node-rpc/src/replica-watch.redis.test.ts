import { createRedisBus, type Bus } from '@agent-backend/bus';
import { createRedisPresence, type Presence } from '@agent-backend/presence';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createNodeToolCaller, type RoutingNodeToolCaller } from './bus-node-tool-caller.js';
import { ToolCallCommand, gatewayChannel } from './gateway-commands.js';
import { NodeCallError } from './node-tool-caller.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('replica-watch', { beforeAll, afterAll });
const REPLICA_TTL_MS = 1_000;
const CHECK_MS = 100;

/**
 * The calls in flight of one caller share one liveness check of the gateway replicas holding
 * their nodes: one presence read a tick for all of them (it was one a tick per call), and a
 * replica gone fails every call it held. Real Redis; a stand-in gateway replica that holds the
 * calls without answering (tests/gateway-routes.test.ts runs the real processes).
 */
describe('liveness of the replicas holding calls in flight', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });

  it('reads presence once a tick for every call in flight, and fails them all when the replica dies', async () => {
    const prefix = testRedis.fresh();
    const presence: Presence = createRedisPresence({ url, prefix, replicaTtlMs: REPLICA_TTL_MS });
    closers.push(() => presence.close());
    let liveReads = 0;
    const counted: Presence = Object.create(presence) as Presence;
    counted.liveReplicas = () => {
      liveReads++;
      return presence.liveReplicas();
    };
    // The gateway: holds every call, beats while alive.
    const gatewayBus: Bus = createRedisBus({ url, prefix });
    closers.push(() => gatewayBus.close());
    const held: string[] = [];
    await gatewayBus.respond(gatewayChannel('g1'), (raw) => {
      held.push(ToolCallCommand.parse(raw).nodeId);
      return new Promise(() => {});
    });
    // g2 lives on (with no replica alive, the route cache would keep its route to g1).
    const beat = (ids: string[]) => ids.forEach((id) => void presence.heartbeatReplica(id));
    await Promise.all(['g1', 'g2'].map((id) => presence.heartbeatReplica(id)));
    const beats = setInterval(() => beat(['g1']), REPLICA_TTL_MS / 5);
    const otherBeats = setInterval(() => beat(['g2']), REPLICA_TTL_MS / 5);
    closers.push(async () => {
      clearInterval(beats);
      clearInterval(otherBeats);
    });
    await presence.upsertNode({
      userId: 'u1',
      nodeId: 'pc',
      nodeType: 'desktop',
      replicaId: 'g1',
      data: {
        node_id: 'pc',
        node_type: 'desktop',
        node_name: 'pc',
        status: 'online',
        available_tools: ['t'],
        capabilities: [],
        current_tasks: 0,
        max_concurrent_tasks: 3,
      },
    });

    const callerBus = createRedisBus({ url, prefix });
    closers.push(() => callerBus.close());
    const caller: RoutingNodeToolCaller = createNodeToolCaller({
      bus: callerBus,
      presence: counted,
      replicaCheckMs: CHECK_MS,
    });
    closers.push(() => caller.close());
    const calls = Array.from({ length: 20 }, () =>
      caller
        .callTool({
          userId: 'u1',
          nodeType: 'desktop',
          toolName: 't',
          arguments: {},
          timeoutMs: 30_000,
        })
        .catch((error: unknown) => error),
    );
    const until = Date.now() + 5_000;
    while (held.length < 20 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(held).toHaveLength(20);

    // About two reads a tick while 20 calls wait: the calls' one and the route cache's (one per
    // call and tick before: ~200).
    liveReads = 0;
    await new Promise((r) => setTimeout(r, 10 * CHECK_MS));
    expect(liveReads).toBeGreaterThanOrEqual(3);
    expect(liveReads).toBeLessThanOrEqual(30);

    // The replica dies without a word: every call fails within about its TTL.
    clearInterval(beats);
    const failures = await Promise.all(calls);
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(NodeCallError);
      expect((failure as NodeCallError).code).toBe('node_disconnected');
    }
    // No call in flight and no route left: the tickers stop, presence is not read any more.
    await new Promise((r) => setTimeout(r, 3 * CHECK_MS));
    const after = liveReads;
    await new Promise((r) => setTimeout(r, 5 * CHECK_MS));
    expect(liveReads).toBe(after);
  }, 20_000);
});

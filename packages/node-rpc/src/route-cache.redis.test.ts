import { createRedisBus, type Bus } from '@agent-backend/bus';
import { createRedisPresence, type Presence } from '@agent-backend/presence';
import { redisTestKeys, testRedisUrl } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createNodeToolCaller, type RoutingNodeToolCaller } from './bus-node-tool-caller.js';
import {
  GATEWAY_ERROR,
  GatewayCommandError,
  PRESENCE_CHANGES_CHANNEL,
  ToolCallCommand,
  gatewayChannel,
} from './gateway-commands.js';
import { NodeCallError } from './node-tool-caller.js';

const url = testRedisUrl();
const testRedis = redisTestKeys('route-cache', { beforeAll, afterAll });
const REPLICA_TTL_MS = 1_500;
const record = (nodeId: string) => ({
  node_id: nodeId,
  node_type: 'desktop',
  node_name: nodeId,
  status: 'online',
  os: '',
  os_version: '',
  app_version: '',
  capabilities: [],
  available_tools: ['t'],
  current_tasks: 0,
  max_concurrent_tasks: 3,
});

/**
 * The caller's route cache on real Redis (bus and presence), against stand-in gateway replicas
 * that answer on their bus channel as apps/gateway does, so a route can be made stale without
 * the announcement a real gateway publishes (a lost one). tests/gateway-routes.test.ts runs the
 * real processes.
 */
describe('route cache', () => {
  const closers: (() => Promise<void>)[] = [];
  let prefix: string;
  let presence: Presence;
  let reads: number;
  let caller: RoutingNodeToolCaller;
  let callerBus: Bus;

  /** A gateway replica holding `nodes`; `old`: one that predates the not-here answer. */
  const gateway = async (replicaId: string, old = false) => {
    const bus = createRedisBus({ url, prefix });
    const held = new Set<string>();
    const deliveries: string[] = [];
    const subscription = await bus.respond(gatewayChannel(replicaId), (raw) => {
      const command = ToolCallCommand.parse(raw);
      if (!held.has(command.nodeId)) {
        if (command.notHereOk && !old) return { notHere: true };
        throw new GatewayCommandError(GATEWAY_ERROR.nodeNotFound, 'not connected');
      }
      deliveries.push(command.nodeId);
      const text = `${replicaId}:${command.nodeId}`;
      return {
        response: {
          jsonrpc: '2.0',
          id: command.request.id,
          result: { content: [{ type: 'text', text }] },
        },
      };
    });
    await presence.heartbeatReplica(replicaId);
    const kill = async () => {
      await subscription.unsubscribe();
      await bus.close();
    };
    closers.push(kill);
    return {
      deliveries,
      kill,
      /** Takes the node's connection and writes presence; `announce: false` loses the news. */
      async hold(nodeId: string, announce = true) {
        held.add(nodeId);
        await presence.upsertNode({
          userId: 'u1',
          nodeId,
          nodeType: 'desktop',
          replicaId,
          data: record(nodeId),
        });
        if (announce)
          await bus.publish(PRESENCE_CHANGES_CHANNEL, { kind: 'node', userId: 'u1', nodeId });
      },
      drop(nodeId: string) {
        held.delete(nodeId);
      },
    };
  };
  const call = (nodeId: string) =>
    caller.callTool({
      userId: 'u1',
      nodeType: 'desktop',
      nodeId,
      toolName: 't',
      arguments: {},
      timeoutMs: 5_000,
    });
  const textOf = (result: Awaited<ReturnType<typeof call>>) => result.text;
  const eventually = async (check: () => boolean, withinMs: number) => {
    const until = Date.now() + withinMs;
    while (!check()) {
      if (Date.now() > until) throw new Error(`not within ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  afterEach(async () => {
    await caller.close();
    for (const close of closers.splice(0)) await close().catch(() => undefined);
    await callerBus.close();
    await presence.close();
  });
  const setUp = () => {
    prefix = testRedis.fresh();
    presence = createRedisPresence({ url, prefix, replicaTtlMs: REPLICA_TTL_MS });
    reads = 0;
    const counted: Presence = Object.create(presence) as Presence;
    counted.listNodes = (userId) => {
      reads++;
      return presence.listNodes(userId);
    };
    callerBus = createRedisBus({ url, prefix });
    caller = createNodeToolCaller({ bus: callerBus, presence: counted });
  };

  it('reads presence once for repeated calls, and again after a gateway announces a change', async () => {
    setUp();
    const g1 = await gateway('g1');
    await g1.hold('pc');
    for (let i = 0; i < 5; i++) expect(textOf(await call('pc'))).toBe('g1:pc');
    expect(reads).toBe(1);
    expect(g1.deliveries).toHaveLength(5);
    await g1.hold('pc');
    await eventually(() => caller.routes().length === 0, REPLICA_TTL_MS);
    await call('pc');
    expect(reads).toBe(2);
  });

  it.each([
    ['a current gateway (not here)', false],
    ['a gateway that predates it (node_not_found)', true],
  ])(
    'a call on a stale route, answered by %s, reaches the node once on a fresh read',
    async (_, old) => {
      setUp();
      const [g1, g2] = [await gateway('g1', old), await gateway('g2', old)];
      await g1.hold('pc');
      expect(textOf(await call('pc'))).toBe('g1:pc');
      // The node moved to g2; its announcement was lost.
      g1.drop('pc');
      await g2.hold('pc', false);
      expect(textOf(await call('pc'))).toBe('g2:pc');
      expect(g1.deliveries).toEqual(['pc']);
      expect(g2.deliveries).toEqual(['pc']);
      expect(reads).toBe(2);
      expect(caller.routes()).toEqual([{ userId: 'u1', nodeId: 'pc', replicaId: 'g2' }]);
    },
  );

  it('a node that disconnected fails the call with node_not_found, announced or not', async () => {
    setUp();
    const g1 = await gateway('g1');
    await g1.hold('pc');
    await g1.hold('tab');
    await call('pc');
    await call('tab');
    g1.drop('pc');
    await presence.removeNode('u1', 'pc', { replicaId: 'g1' });
    const failure = await call('pc').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(NodeCallError);
    expect((failure as NodeCallError).code).toBe('node_not_found');
    expect(g1.deliveries).toEqual(['pc', 'tab']);
  });

  it('drops the routes to a gateway killed without a word within the replica TTL', async () => {
    setUp();
    const [g1, g2] = [await gateway('g1'), await gateway('g2')];
    await g1.hold('pc');
    await g2.hold('tab');
    await call('pc');
    await call('tab');
    expect(
      caller
        .routes()
        .map((r) => r.replicaId)
        .sort(),
    ).toEqual(['g1', 'g2']);
    await g1.kill();
    await eventually(() => !caller.routes().some((r) => r.replicaId === 'g1'), REPLICA_TTL_MS);
    const failure = await call('pc').catch((error: unknown) => error);
    expect((failure as NodeCallError).code).toBe('node_not_found');
  });
});

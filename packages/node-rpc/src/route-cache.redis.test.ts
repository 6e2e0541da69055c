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
  /** Presence reads per user. */
  let readsOf: Map<string, number>;
  /** Set: the next presence read of a user waits for it. */
  let gate: { userId: string; open: Promise<void> } | undefined;
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
    // Alive while its heartbeats go on, as a gateway is.
    await presence.heartbeatReplica(replicaId);
    const beats = setInterval(() => void presence.heartbeatReplica(replicaId), REPLICA_TTL_MS / 5);
    const kill = async () => {
      clearInterval(beats);
      await subscription.unsubscribe();
      await bus.close();
    };
    closers.push(kill);
    return {
      deliveries,
      kill,
      /** Takes the node's connection and writes presence; `announce: false` loses the news. */
      async hold(nodeId: string, announce = true, userId = 'u1') {
        held.add(nodeId);
        await presence.upsertNode({
          userId,
          nodeId,
          nodeType: 'desktop',
          replicaId,
          data: record(nodeId),
        });
        if (announce) await bus.publish(PRESENCE_CHANGES_CHANNEL, { kind: 'node', userId, nodeId });
      },
      drop(nodeId: string) {
        held.delete(nodeId);
      },
    };
  };
  const call = (nodeId: string, userId = 'u1') =>
    caller.callTool({
      userId,
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
  const setUp = (routeMaxAgeMs?: number) => {
    prefix = testRedis.fresh();
    presence = createRedisPresence({ url, prefix, replicaTtlMs: REPLICA_TTL_MS });
    reads = 0;
    readsOf = new Map();
    gate = undefined;
    const counted: Presence = Object.create(presence) as Presence;
    counted.listNodes = async (userId) => {
      reads++;
      readsOf.set(userId, (readsOf.get(userId) ?? 0) + 1);
      if (gate?.userId === userId) {
        const { open } = gate;
        gate = undefined;
        await open;
      }
      return presence.listNodes(userId);
    };
    callerBus = createRedisBus({ url, prefix });
    caller = createNodeToolCaller({
      bus: callerBus,
      presence: counted,
      ...(routeMaxAgeMs ? { routeMaxAgeMs } : {}),
    });
  };
  /** Subscribers of the presence changes channel (the bus's Redis channel for it). */
  const listeners = async () =>
    (await testRedis.raw.pubsub('NUMSUB', `${prefix}bus:pub:${PRESENCE_CHANGES_CHANNEL}`))[1];

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
  it("a change of one user's nodes does not keep another user's read in flight from being cached", async () => {
    setUp(60_000);
    const g1 = await gateway('g1');
    await g1.hold('pc', true, 'u1');
    await g1.hold('tab', true, 'u2');
    await call('pc', 'u1');
    let open!: () => void;
    gate = { userId: 'u2', open: new Promise<void>((resolve) => (open = resolve)) };
    const pending = call('tab', 'u2');
    await eventually(() => readsOf.get('u2') === 1, 5_000);
    // u1's node changes while u2's read is in flight: u1's route goes, u2's read is kept.
    await g1.hold('pc', true, 'u1');
    await eventually(() => !caller.routes().some((r) => r.userId === 'u1'), 5_000);
    open();
    expect(textOf(await pending)).toBe('g1:tab');
    expect(textOf(await call('tab', 'u2'))).toBe('g1:tab');
    expect(readsOf.get('u2')).toBe(1);
  });

  it('drops the routes to a gateway killed without a word by its liveness, with a long age bound', async () => {
    setUp(60_000);
    const [g1, g2] = [await gateway('g1'), await gateway('g2')];
    await g1.hold('pc');
    await g2.hold('tab', true, 'u2');
    await call('pc');
    await call('tab', 'u2');
    await g1.kill();
    // Well within the 60 s age bound: presence stops listing g1 alive after its replica TTL.
    await eventually(() => !caller.routes().some((r) => r.replicaId === 'g1'), 10_000);
    expect(caller.routes()).toEqual([{ userId: 'u2', nodeId: 'tab', replicaId: 'g2' }]);
    const failure = await call('pc').catch((error: unknown) => error);
    expect((failure as NodeCallError).code).toBe('node_not_found');
  }, 20_000);

  it('leaves no subscription on the bus after close', async () => {
    setUp(60_000);
    const g1 = await gateway('g1');
    await g1.hold('pc');
    await call('pc');
    expect(await listeners()).toBe(1);
    await caller.close();
    expect(await listeners()).toBe(0);
  });

  it('closed while its first call subscribes: no subscription after, nothing cached', async () => {
    setUp(60_000);
    const g1 = await gateway('g1');
    await g1.hold('pc');
    const first = call('pc');
    await caller.close();
    expect(textOf(await first)).toBe('g1:pc');
    expect(textOf(await call('pc'))).toBe('g1:pc');
    expect(await listeners()).toBe(0);
    expect(caller.routes()).toEqual([]);
    expect(reads).toBe(2);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { testRedisUrl } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { eventually, ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * Connections per user (docs/limits.md) across two gateways sharing Redis: the deployment's
 * total of a user's node and web connections stays within its limit, another user is untouched,
 * a closed connection frees its slot at once and a SIGKILLed gateway's within the lease.
 */
describe('gateway connections per user across gateways', () => {
  let cluster: Cluster;
  let redis: Redis;
  const open: TestSocket[] = [];
  const held = (pool: string, userId: string) =>
    redis.zcard(`${cluster.prefix}limit:${pool}:${userId}`);

  /** A desktop node `nodeId` of `userId` on `gateway`: registered, or how it was closed. */
  const node = async (gateway: number, userId: string, nodeId: string, url?: string) => {
    const query = {
      client_id: `desktop_${userId}`,
      node_id: nodeId,
      token: await cluster.token(userId),
    };
    const socket = await openSocket(url ?? cluster.wsUrl(gateway, '/ws/desktop', query));
    open.push(socket);
    socket.send({ type: 'register', node_id: nodeId, node_type: 'desktop', available_tools: [] });
    return socket;
  };
  const registered = (socket: TestSocket) => socket.next(ofType('registered'));
  const web = async (gateway: number, userId: string) => {
    const query = { user_id: userId, token: await cluster.token(userId) };
    const socket = await openSocket(cluster.wsUrl(gateway, '/ws/web', query));
    open.push(socket);
    socket.send({ type: 'ping' });
    return socket;
  };
  const tooMany = { code: 1008, reason: 'too many connections' };

  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 2,
      apis: 0,
      env: {
        MAX_NODE_CONNECTIONS_PER_USER: '2',
        MAX_WEB_CONNECTIONS_PER_USER: '2',
        RUN_SLOT_LEASE_MS: '1500',
        GATEWAY_REPLICA_TTL_MS: '3000',
      },
    });
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    for (const socket of open) socket.ws.terminate();
    await redis?.quit();
    await cluster?.stop();
  });

  it('holds node connections per user for both gateways; a reconnecting node keeps its slot', async () => {
    const a = await node(0, 'ann', 'a');
    const b = await node(1, 'ann', 'b');
    await Promise.all([registered(a), registered(b)]);
    expect(await held('node_connections', 'ann')).toBe(2);

    const c = await node(0, 'ann', 'c');
    expect(await c.closed).toEqual(tooMany);
    const c2 = await node(1, 'ann', 'c');
    expect(await c2.closed).toEqual(tooMany);

    // Another user connects while ann is at her limit.
    const bobs = await node(1, 'bob', 'b1');
    await registered(bobs);

    // The same node connecting again (to the other gateway) takes the slot it has.
    const again = await node(1, 'ann', 'a');
    await registered(again);
    expect((await a.closed).code).toBe(4009);
    expect(await held('node_connections', 'ann')).toBe(2);

    // Closing a connection frees its slot at once.
    await b.close();
    await eventually(async () => (await held('node_connections', 'ann')) === 1);
    const c3 = await node(0, 'ann', 'c');
    await registered(c3);
  });

  it('frees the slot when the live connection closes after a stale one of its instance was refused', async () => {
    const ordered = async (seq: number) => {
      const query = {
        client_id: 'desktop_eve',
        node_id: 'pc',
        token: await cluster.token('eve'),
        instance_id: 'dev-a',
        connection_seq: String(seq),
      };
      return node(0, 'eve', 'pc', cluster.wsUrl(0, '/ws/desktop', query));
    };
    const live = await ordered(2);
    await registered(live);
    // Attempt 1, processed late on the same gateway, takes the node's slot again, then is refused.
    const stale = await ordered(1);
    expect((await stale.closed).code).toBe(4011);
    expect(await held('node_connections', 'eve')).toBe(1);
    await live.close();
    await eventually(async () => (await held('node_connections', 'eve')) === 0);
  });

  it('holds web connections per user for both gateways', async () => {
    const w1 = await web(0, 'carl');
    const w2 = await web(1, 'carl');
    await Promise.all([w1.next(ofType('pong')), w2.next(ofType('pong'))]);
    const w3 = await web(0, 'carl');
    expect(await w3.closed).toEqual(tooMany);
    const other = await web(0, 'dora');
    await other.next(ofType('pong'));
    // A node connection does not count against web connections, nor the reverse.
    await registered(await node(0, 'carl', 'n1'));

    await w2.close();
    await eventually(async () => (await held('web_connections', 'carl')) === 1);
    const w4 = await web(1, 'carl');
    await w4.next(ofType('pong'));
  });

  it("gives back a SIGKILLed gateway's slots within the lease", async () => {
    const doomed = await cluster.startReplica('gateway', 'gateway-doomed');
    const url = (nodeId: string) => {
      const u = new URL('/ws/desktop', doomed.url.replace('http', 'ws'));
      u.searchParams.set('client_id', 'desktop_kim');
      u.searchParams.set('node_id', nodeId);
      return u;
    };
    const token = await cluster.token('kim');
    const withToken = (nodeId: string) => {
      const u = url(nodeId);
      u.searchParams.set('token', token);
      return u.toString();
    };
    await registered(await node(0, 'kim', 'k1', withToken('k1')));
    await registered(await node(0, 'kim', 'k2', withToken('k2')));
    expect((await (await node(0, 'kim', 'k3')).closed).code).toBe(1008);

    await doomed.stop('SIGKILL');
    await eventually(async () => (await held('node_connections', 'kim')) === 0, 10_000);
    await registered(await node(0, 'kim', 'k3'));
  });

  it('gives back the slot of a node that moved to a gateway SIGKILLed since, within the lease', async () => {
    const doomed = await cluster.startReplica('gateway', 'gateway-doomed-2');
    const query = { client_id: 'desktop_fay', node_id: 'pc', token: await cluster.token('fay') };
    const first = await node(0, 'fay', 'pc');
    await registered(first);
    // The node reconnects through another gateway: the first one closes its old socket (4009).
    const moved = new URL('/ws/desktop', doomed.url.replace('http', 'ws'));
    for (const [name, value] of Object.entries(query)) moved.searchParams.set(name, value);
    await registered(await node(0, 'fay', 'pc', moved.toString()));
    expect((await first.closed).code).toBe(4009);
    expect(await held('node_connections', 'fay')).toBe(1);

    await doomed.stop('SIGKILL');
    // The first gateway no longer renews the slot it left to the other one.
    await eventually(async () => (await held('node_connections', 'fay')) === 0, 10_000);
  });
});

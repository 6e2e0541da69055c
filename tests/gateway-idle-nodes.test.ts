import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { testRedisUrl, type ServiceProcess } from '@agent-backend/testing';
import { registerDesktop, startCluster, type Cluster } from './cluster.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/** The `config_warning` lines a process logged at start. */
const configWarnings = (process: ServiceProcess): string[] =>
  process.stdout
    .filter((line) => line.includes('"config_warning"'))
    .map((line) => String((JSON.parse(line) as { msg: unknown }).msg));

/**
 * What an idle node costs its gateway: heartbeats that change nothing write presence only when
 * its entry needs it (a third of the TTL apart, in the replica's batch of refreshes), and the
 * server pings of one pass are spread over time instead of sent in a few loop turns.
 */

describe('gateway presence refreshes of idle nodes', () => {
  const TTL_MS = 1_800;
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  const redis = new Redis(testRedisUrl());
  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      // No server pings: a node is kept listed by its own frames alone.
      env: { GATEWAY_PING_INTERVAL_MS: '600000', NODE_SILENT_TIMEOUT_MS: String(TTL_MS) },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
    redis.disconnect();
  });
  const connectNode = async (userId: string, nodeId: string) => {
    const socket = await registerDesktop(cluster, 0, userId, nodeId);
    sockets.push(socket);
    return socket;
  };

  it('warns at start that pongs alone could not keep a node listed with these settings', () => {
    const warnings = configWarnings(cluster.gateways[0]!);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('GATEWAY_PING_INTERVAL_MS (600000)');
    expect(warnings[0]).toContain(`NODE_SILENT_TIMEOUT_MS (${TTL_MS})`);
  });

  it('writes a heartbeating node a third of the TTL apart, keeps every one listed and lets a silent one expire', async () => {
    const busy = await Promise.all(
      ['a', 'b', 'c'].map((id) => connectNode('idle', `desktop_${id}`)),
    );
    await connectNode('idle', 'desktop_silent');
    // [expiresAt, lastSeenAt, connectedAt, replicaId, data]: lastSeenAt moves on each write.
    const seen = new Set<number>();
    const started = Date.now();
    while (Date.now() - started < 2.5 * TTL_MS) {
      for (const socket of busy) socket.send({ type: 'heartbeat', status: 'online' });
      for (const socket of busy) await socket.next(ofType('heartbeat_ack'));
      const raw = await redis.hget(`${cluster.prefix}presence:user:idle`, 'desktop_a');
      if (raw) seen.add((JSON.parse(raw) as number[])[1]!);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const writes = [...seen].sort((a, b) => a - b);
    const gaps = writes.slice(1).map((t, i) => t - writes[i]!);
    // Heartbeats every ~50 ms; writes at least TTL / 3 (600 ms) apart, yet often enough to live.
    expect(writes.length).toBeGreaterThanOrEqual(3);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(TTL_MS / 3 - 50);
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=idle`, {
      headers: { authorization: `Bearer ${await cluster.token('idle')}` },
    });
    const { nodes } = (await res.json()) as { nodes: Array<{ node_id: string }> };
    expect(nodes.map((n) => n.node_id).sort()).toEqual(['desktop_a', 'desktop_b', 'desktop_c']);
  });
});

describe('gateway ping passes', () => {
  const PING_MS = 1_000;
  const COUNT = 150;
  let cluster: Cluster;
  const sockets: TestSocket[] = [];
  beforeAll(async () => {
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      env: { GATEWAY_PING_INTERVAL_MS: String(PING_MS) },
    });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await cluster?.stop();
  });

  it('gives no warning for pings well within the silent timeout', () => {
    expect(configWarnings(cluster.gateways[0]!)).toEqual([]);
  });

  it('spreads the pings of one pass over time, each connection pinged once a pass', async () => {
    const token = await cluster.token('many');
    const pings = Array.from({ length: COUNT }, () => [] as number[]);
    for (let i = 0; i < COUNT; i += 25) {
      const opened = await Promise.all(
        Array.from({ length: Math.min(25, COUNT - i) }, (_, k) =>
          openSocket(
            cluster.wsUrl(0, '/ws/desktop', {
              client_id: 'desktop_many',
              node_id: `n${i + k}`,
              token,
            }),
          ),
        ),
      );
      opened.forEach((socket, k) => socket.ws.on('ping', () => pings[i + k]!.push(Date.now())));
      sockets.push(...opened);
    }
    const allOpen = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 3.5 * PING_MS));
    // The pings after every connection was open, cut into passes where they pause.
    const all = pings
      .flatMap((times, socket) => times.map((at) => ({ at, socket })))
      .filter(({ at }) => at > allOpen)
      .sort((x, y) => x.at - y.at);
    const passes: Array<typeof all> = [];
    for (const ping of all) {
      const last = passes.at(-1);
      if (last && ping.at - last.at(-1)!.at < PING_MS / 3) last.push(ping);
      else passes.push([ping]);
    }
    // A whole pass: every connection pinged once in it.
    const whole = passes.filter((pass) => new Set(pass.map((p) => p.socket)).size === COUNT);
    expect(whole.length).toBeGreaterThanOrEqual(1);
    for (const pass of whole) {
      expect(pass).toHaveLength(COUNT);
      // 150 connections in slices of 50, 50 ms apart: the pass spans about 100 ms, not one turn.
      expect(pass.at(-1)!.at - pass[0]!.at).toBeGreaterThanOrEqual(80);
    }
  });
});

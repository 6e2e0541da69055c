/**
 * Many node connections across gateway replicas on a Redis Cluster, then one gateway killed.
 *
 *   pnpm build && NODES=10000 npx tsx bench/gateway-100k.ts
 *
 * Starts a local Redis Cluster (six processes, three masters), GATEWAYS gateway processes sharing
 * one port with SO_REUSEPORT (the kernel spreads connections over them like an L4 balancer; see
 * support/reuse-port.ts), one API process, and CLIENTS swarm processes (support/node-swarm.ts)
 * of SDK `NodeClient`s, each bound to its own source address 127.0.0.2, .3, … Users have
 * NODES_PER_USER desktop nodes each. Measures, in order:
 * 1. time until presence lists every node (read with `listNodes` for every user);
 * 2. gateway RSS per connection, heartbeat round trip (heartbeat → heartbeat_ack) p50/p99;
 * 3. under that load, `GET /node/devices` and `POST /node/tools/call` through the API at RATE each;
 * 4. SIGKILL of one gateway: time until every node is listed on a live replica again, the peak
 *    rate of new connections a survivor saw (from its open descriptors, sampled every 250 ms),
 *    nodes listed twice or missing at the end.
 *
 * Env: NODES (default 10000), GATEWAYS (default 7: after one dies each survivor must stay under
 * the 20,000 descriptors a process may open), CLIENTS (default 8), NODES_PER_USER (default 10),
 * CONNECT_RATE (new connections a second per swarm, default 250), RATE (calls/s, default 50),
 * CALL_S (seconds of calls, default 20), HEARTBEAT_MS (default 20000), EXTRA_ENV (`A=1,B=2`:
 * added to the API's and every gateway's environment, e.g. a longer `GATEWAY_PING_INTERVAL_MS`
 * for a large fleet), DATABASE_URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { importKeys, signAccessToken } from '../packages/auth/src/index.js';
import { loadConfig } from '../packages/config/src/index.js';
import { createEngines } from '../packages/engines/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { createTestSchema, startTestRedisCluster } from '../packages/testing/src/index.js';
import { askRtts, startSwarm, type SwarmReport } from './support/node-swarm.js';
import { fmt, openLoop, percentile } from './support/open-loop.js';
import {
  freePort,
  machineLine,
  procMemory,
  ROOT,
  sleep,
  startEntry,
  stopChild,
} from './support/processes.js';

const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const nodes = Number(process.env.NODES ?? 10_000);
const gatewayCount = Number(process.env.GATEWAYS ?? 7);
const clientCount = Number(process.env.CLIENTS ?? 8);
const perUser = Number(process.env.NODES_PER_USER ?? 10);
const connectRate = Number(process.env.CONNECT_RATE ?? 250);
const rate = Number(process.env.RATE ?? 50);
const callS = Number(process.env.CALL_S ?? 20);
const heartbeatMs = Number(process.env.HEARTBEAT_MS ?? 20_000);
const extraEnv = Object.fromEntries(
  (process.env.EXTRA_ENV ?? '')
    .split(',')
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const users = Math.ceil(nodes / perUser);
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const fds = (pid: number) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};
const stats = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return `p50 ${fmt(percentile(s, 50))} ms, p99 ${fmt(percentile(s, 99))} ms, max ${fmt(s.at(-1) ?? NaN)} ms (${s.length} samples)`;
};

async function main(): Promise<void> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: ChildProcess[] = [];
  let stopCluster = async () => undefined as unknown;
  process.once('SIGINT', () => {
    for (const child of children) child.kill('SIGKILL');
    void stopCluster().finally(() => process.exit(130));
  });
  try {
    log(
      `${machineLine()}; ${nodes} nodes, ${users} users, ${gatewayCount} gateways, ${clientCount} swarms, ${connectRate} connections/s per swarm, heartbeats every ${heartbeatMs} ms${Object.keys(extraEnv).length > 0 ? `, ${JSON.stringify(extraEnv)}` : ''}`,
    );
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const keys = await importKeys(pair);
    const schema = await createTestSchema('bench_100k');
    cleanups.push(() => schema.drop());
    const cluster = await startTestRedisCluster();
    cleanups.push(() => cluster.stop());
    stopCluster = () => cluster.stop();
    const env = {
      JWT_PUBLIC_KEY: pair.publicKey,
      JWT_PRIVATE_KEY: pair.privateKey,
      LOG_LEVEL: 'warn',
      REDIS_MODE: 'cluster',
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      DATABASE_URL: databaseUrl,
      DATABASE_SCHEMA: schema.schema,
      RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE: '0',
      MAX_NODE_CONNECTIONS_PER_USER: '0',
      ...extraEnv,
    };
    // The API first: it applies the migrations the gateways read (token revocations).
    const api = await startEntry('apps/api/dist/main.js', { ...env, INSTANCE_ID: 'bench-api' });
    children.push(api.child);
    cleanups.push(() => api.stop());
    const port = await freePort();
    const gateways = await Promise.all(
      Array.from({ length: gatewayCount }, async (_, g) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            '--import',
            './bench/support/reuse-port.ts',
            'apps/gateway/dist/main.js',
          ],
          {
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? '',
              HOME: process.env.HOME ?? '',
              HOST: '127.0.0.1',
              PORT: String(port),
              BENCH_REUSE_PORT: String(port),
              INSTANCE_ID: `bench-gw-${g}`,
              ...env,
            },
            stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
          },
        );
        children.push(child);
        cleanups.push(() => stopChild(child));
        await new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve());
          child.once('exit', (code) => reject(new Error(`gateway ${g} exited with ${code}`)));
        });
        return { child, id: `bench-gw-${g}`, baseRss: procMemory(child.pid!) };
      }),
    );
    const engines = await createEngines(
      loadConfig('api', { ...env, INSTANCE_ID: 'bench-observer' }),
      createLogger({ level: 'warn' }),
    );
    cleanups.push(() => engines.close());
    log(`cluster, ${gatewayCount} gateways on port ${port} and the API up`);

    const reports: SwarmReport[] = [];
    const swarms = Array.from({ length: clientCount }, (_, c) => {
      const from = Math.floor((users * c) / clientCount);
      const to = Math.floor((users * (c + 1)) / clientCount);
      reports[c] = { registered: 0, connects: 0, disconnects: 0, stopped: {}, codes: {} };
      const swarm = startSwarm(
        {
          url: `ws://127.0.0.1:${port}`,
          localAddress: `127.0.0.${2 + (c % 8)}`,
          from,
          to,
          nodesPerUser: perUser,
          publicKey: pair.publicKey,
          privateKey: pair.privateKey,
          connectRate,
          heartbeatMs,
        },
        (report) => (reports[c] = report),
      );
      children.push(swarm);
      cleanups.push(() => stopChild(swarm));
      return swarm;
    });
    const registered = () => reports.reduce((sum, r) => sum + r.registered, 0);
    const userIds = Array.from({ length: users }, (_, u) => `bench-u${u}`);
    /** Nodes listed on each replica, nodes listed twice, users read. */
    const census = async () => {
      const byReplica = new Map<string, number>();
      let twice = 0;
      for (let i = 0; i < userIds.length; i += 500) {
        const lists = await Promise.all(
          // A read that fails (a command timeout on a saturated machine) is read again.
          userIds
            .slice(i, i + 500)
            .map((u) => engines.presence.listNodes(u).catch(() => engines.presence.listNodes(u))),
        );
        for (const list of lists) {
          twice += list.length - new Set(list.map((e) => e.nodeId)).size;
          for (const e of list) byReplica.set(e.replicaId, (byReplica.get(e.replicaId) ?? 0) + 1);
        }
      }
      return { byReplica, twice };
    };

    const t0 = Date.now();
    /** Seconds since `since` when every node is listed, else when the count stalled for a minute. */
    let listedAt = NaN;
    let lastCount = -1;
    let lastChange = Date.now();
    for (;;) {
      await sleep(2_000);
      const { byReplica } = await census();
      const listed = [...byReplica.values()].reduce((a, b) => a + b, 0);
      const stops = reports.flatMap((r) => Object.entries(r.stopped).map(([k, n]) => `${n} ${k}`));
      log(
        `registered ${registered()}, listed ${listed}; stopped clients: ${stops.join(', ') || 0}`,
      );
      if (listed !== lastCount) [lastCount, lastChange] = [listed, Date.now()];
      if (listed >= nodes) {
        listedAt = (Date.now() - t0) / 1_000;
        break;
      }
      if (Date.now() - lastChange > 60_000) break;
    }
    log(
      Number.isNaN(listedAt)
        ? `presence stalled at ${lastCount} of ${nodes} nodes (no change for 60 s)`
        : `every node listed after ${listedAt.toFixed(1)} s (connect ramp ${connectRate}/s per swarm)`,
    );
    const before = await census();
    log(`per replica: ${[...before.byReplica].map(([r, n]) => `${r} ${n}`).join(', ')}`);

    await sleep(heartbeatMs * 1.5);
    const rtts = (await Promise.all(swarms.map(askRtts))).flat();
    log(`heartbeat round trip: ${stats(rtts)}`);
    let rss = 0;
    let baseRss = 0;
    for (const g of gateways) {
      rss += procMemory(g.child.pid!);
      baseRss += g.baseRss;
    }
    log(
      `gateway RSS ${(rss / 2 ** 20).toFixed(0)} MiB in all (${(baseRss / 2 ** 20).toFixed(0)} MiB before the nodes): ${((rss - baseRss) / nodes / 1024).toFixed(1)} KiB per connection; descriptors per gateway ${gateways.map((g) => fds(g.child.pid!)).join(', ')}`,
    );

    const token = (u: number) =>
      signAccessToken(keys, `bench-u${u % users}`).then((t) => t.accessToken);
    const tokens = await Promise.all(
      Array.from({ length: Math.min(users, 200) }, (_, u) => token(u)),
    );
    const auth = (i: number) => ({ authorization: `Bearer ${tokens[i % tokens.length]}` });
    const listing = openLoop(
      async (i) => {
        const user = `bench-u${(i % tokens.length) % users}`;
        const res = await fetch(`${api.url}/node/devices?user_id=${user}`, { headers: auth(i) });
        const body = (await res.json()) as { total?: number };
        if (res.status !== 200 || body.total !== perUser)
          throw Object.assign(new Error('listing'), {
            code: `HTTP ${res.status} total ${body.total}`,
          });
      },
      rate,
      callS,
      0,
    );
    const calls = openLoop(
      async (i) => {
        const res = await fetch(`${api.url}/node/tools/call`, {
          method: 'POST',
          headers: { ...auth(i), 'content-type': 'application/json' },
          body: JSON.stringify({
            node_type: 'desktop',
            tool_name: 'echo',
            arguments: { i },
            timeout_ms: 10_000,
          }),
        });
        const body = (await res.json()) as { success?: boolean; text?: string };
        if (res.status !== 200 || body.success !== true)
          throw Object.assign(new Error('call'), {
            code: `HTTP ${res.status} ${JSON.stringify(body).slice(0, 80)}`,
          });
      },
      rate,
      callS,
      0,
    );
    for (const [name, r] of [
      ['GET /node/devices', await listing],
      ['POST /node/tools/call', await calls],
    ] as const) {
      const errors = [...r.errors].map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
      log(
        `${name} at ${rate}/s for ${callS} s: ${r.ok} ok, errors ${errors}; ${stats(r.latenciesMs)}`,
      );
    }

    const victim = gateways[0]!;
    const survivors = gateways.slice(1);
    const lost = before.byReplica.get(victim.id) ?? 0;
    const fdSamples = survivors.map((g) => [fds(g.child.pid!)]);
    const sampler = setInterval(
      () => survivors.forEach((g, i) => fdSamples[i]!.push(fds(g.child.pid!))),
      250,
    );
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    log(`SIGKILL ${victim.id} (${lost} nodes)`);
    const listedBefore = [...before.byReplica.values()].reduce((a, b) => a + b, 0);
    let relisted = NaN;
    let liveCount = -1;
    let changedAt = Date.now();
    for (;;) {
      await sleep(1_000);
      const now = await census();
      const live = [...now.byReplica]
        .filter(([r]) => r !== victim.id)
        .reduce((a, [, n]) => a + n, 0);
      log(
        `+${((Date.now() - killedAt) / 1_000).toFixed(0)} s: registered ${registered()}, listed on live replicas ${live}, on the dead one ${now.byReplica.get(victim.id) ?? 0}, listed twice ${now.twice}`,
      );
      if (live !== liveCount) [liveCount, changedAt] = [live, Date.now()];
      if (live >= listedBefore) {
        relisted = (Date.now() - killedAt) / 1_000;
        break;
      }
      if (Date.now() - changedAt > 60_000) break;
    }
    clearInterval(sampler);
    const peaks = fdSamples.map((s) => Math.max(0, ...s.slice(1).map((v, i) => (v - s[i]!) * 4)));
    const end = await census();
    const listedEnd = [...end.byReplica].reduce((a, [, n]) => a + n, 0);
    log(
      `every node listed before the kill (${listedBefore}) listed on a live replica again after ${relisted.toFixed(1)} s (NaN: never; the count settled at ${liveCount} after ${((changedAt - killedAt) / 1_000).toFixed(1)} s); peak new connections per survivor ${Math.max(...peaks)}/s (all survivors: ${peaks.join(', ')}); at the end listed ${listedEnd} of ${nodes}, twice ${end.twice}, on the dead replica ${end.byReplica.get(victim.id) ?? 0}`,
    );
    log(
      `swarms: ${reports.map((r) => `${r.connects} connects / ${r.disconnects} drops (${JSON.stringify(r.codes)}), stopped ${JSON.stringify(r.stopped)}`).join('; ')}`,
    );
    log(machineLine());
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
  }
}

await main();
process.exit(0);

/**
 * Memory of idle node connections in one gateway process: heap and RSS per connection at 10,000
 * registered desktop nodes that send heartbeats and answer server pings, against the same process
 * with no connection (after a warm-up), measured in the same run.
 *
 *   pnpm build && node --import tsx bench/gateway-idle-connections.ts
 *
 * The gateway is the built `apps/gateway/dist/main.js`, unchanged, started with `--expose-gc` and a
 * small preload (`--import data:…`) that answers an IPC message with `process.memoryUsage()`
 * (after two full GCs when asked) and the event-loop delay since the last answer: the measuring
 * instrument, nothing the gateway itself does. The nodes are
 * `ws` clients in separate "clients" processes (this file, `clients` argument), so their memory is
 * not the gateway's. Presence is checked in Redis afterwards: it must hold every node.
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test; the gateway's config needs a schema, it never queries
 * it), CONNECTIONS (default 10000), NODES_PER_USER (default 10), CLIENT_PROCESSES (default 2),
 * HEARTBEAT_MS (default 20000), PING_INTERVAL_MS (the gateway's GATEWAY_PING_INTERVAL_MS, default
 * 15000), HOLD_S (idle time at full count before the final sample, default 45), OPEN_CONCURRENCY
 * (handshakes in flight per client process, default 100), WARMUP_CONNECTIONS (default 200),
 * REPLICA_TTL_MS (the gateway's GATEWAY_REPLICA_TTL_MS; unset: its default), PROFILE_DIR (the
 * gateway runs with `--cpu-prof` and writes its profile there when it is stopped with SIGTERM at
 * the end), SOURCE_ADDRESSES (loopback source addresses of the clients, 127.0.0.2 and up, each
 * connection from the next in turn; default one per 25,000 connections, and below 25,000 none:
 * the kernel picks 127.0.0.1).
 *
 * Beyond about 28,000 connections one source address runs out of ephemeral ports, hence the
 * source addresses. Each process needs a file descriptor per socket: the gateway about
 * CONNECTIONS, each client process CONNECTIONS / CLIENT_PROCESSES. The script raises the soft
 * limit of its children up to the hard limit (`ulimit -Hn`) and stops before starting anything
 * when the hard limit is too low, saying by how much (raise it as root, e.g. `ulimit -Hn 200000`
 * in the shell that runs the script).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { importKeys, signAccessToken } from '../packages/auth/src/index.js';
import { loadConfig } from '../packages/config/src/index.js';
import { applyMigrations } from '../packages/engines/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import { createRedisPresence } from '../packages/presence/src/index.js';
import { closeRedis, createRedis, redisKeys, type Redis } from '../packages/redis/src/index.js';
import { createTestSchema, uniquePrefix, type TestSchema } from '../packages/testing/src/index.js';
import {
  nextMessage,
  PRELOAD,
  sampleMemory as sample,
  type Memory,
  type MemorySample as Sample,
} from './support/memory-probe.js';
import { fileLimits, sourceAddresses, withFileLimit } from './support/connection-limits.js';
import { cpuMs, freePort, procMemory as procStatus, sleep } from './support/processes.js';
import { unlinkPrefix } from './support/redis.js';

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const connections = Number(process.env.CONNECTIONS ?? 10_000);
const nodesPerUser = Number(process.env.NODES_PER_USER ?? 10);
const clientProcesses = Number(process.env.CLIENT_PROCESSES ?? 2);
const heartbeatMs = Number(process.env.HEARTBEAT_MS ?? 20_000);
const pingIntervalMs = Number(process.env.PING_INTERVAL_MS ?? 15_000);
const holdS = Number(process.env.HOLD_S ?? 45);
const openConcurrency = Number(process.env.OPEN_CONCURRENCY ?? 100);
const warmUpConnections = Number(process.env.WARMUP_CONNECTIONS ?? 200);
const profileDir = process.env.PROFILE_DIR;
const sources = sourceAddresses(
  connections,
  process.env.SOURCE_ADDRESSES ? Number(process.env.SOURCE_ADDRESSES) : undefined,
);
/** Open files beyond the sockets of the connections: Redis, PostgreSQL, IPC, stdio, the loader. */
const SPARE_FILES = 200;
/** Waiting for every connection to open: 80 s, plus 8 ms a connection (125/s) beyond 10,000. */
const openTimeoutMs = 80_000 + Math.max(0, connections - 10_000) * 8;

interface OpenCommand {
  cmd: 'open';
  base: string;
  /** Source addresses, one per connection in turn; empty: the kernel's choice. */
  sources: string[];
  users: Array<{ userId: string; token: string }>;
}
interface ClientStats {
  registered: number;
  failed: number;
  closedUnexpectedly: number;
  pings: number;
  heartbeats: number;
  acks: number;
}

// ---------------------------------------------------------------- clients (child process)

/** Holds node connections: opens them `openConcurrency` at a time, registers, heartbeats. */
function runClients(): void {
  const sockets = new Set<{ ws: WebSocket; timers: NodeJS.Timeout[] }>();
  const stats: ClientStats = {
    registered: 0,
    failed: 0,
    closedUnexpectedly: 0,
    pings: 0,
    heartbeats: 0,
    acks: 0,
  };
  /** Heartbeat → heartbeat_ack round trips (ms), taken while the full count is held. */
  const ackMs: number[] = [];
  let closing = false;
  let recordAcks = false;
  const report = setInterval(() => process.send?.({ stats }), 1_000);
  process.on('disconnect', () => process.exit(0));

  let opened = 0;
  const openOne = (
    base: string,
    sources: string[],
    userId: string,
    token: string,
    nodeId: string,
  ) =>
    new Promise<void>((resolve) => {
      const url = `${base}/ws/desktop?client_id=desktop_${userId}&node_id=${nodeId}`;
      const localAddress = sources.length > 0 ? sources[opened++ % sources.length] : undefined;
      const ws = new WebSocket(url, {
        headers: { authorization: `Bearer ${token}` },
        perMessageDeflate: false,
        ...(localAddress ? { localAddress } : {}),
      });
      const entry = { ws, timers: [] as NodeJS.Timeout[] };
      const sentAt: number[] = [];
      let registered = false;
      ws.on('open', () => {
        sockets.add(entry);
        ws.send(
          JSON.stringify({
            type: 'register',
            node_id: nodeId,
            node_type: 'desktop',
            node_name: `bench ${nodeId}`,
            os: 'linux',
            os_version: '6.1',
            app_version: '1.0.0',
            capabilities: ['screenshot', 'input'],
            available_tools: ['screenshot', 'click', 'type_text', 'read_file'],
            max_concurrent_tasks: 3,
          }),
        );
      });
      ws.on('ping', () => stats.pings++);
      ws.on('message', (data) => {
        const type = (JSON.parse(data.toString()) as { type?: string }).type;
        if (type === 'heartbeat_ack') {
          stats.acks++;
          const sent = sentAt.shift();
          if (sent !== undefined && recordAcks) ackMs.push(performance.now() - sent);
        }
        if (type !== 'registered' || registered) return;
        registered = true;
        stats.registered++;
        const beat = () => {
          stats.heartbeats++;
          sentAt.push(performance.now());
          ws.send(JSON.stringify({ type: 'heartbeat', status: 'online', current_tasks: 0 }));
        };
        // Random phase, so 10,000 nodes spread their heartbeats evenly over the interval.
        entry.timers.push(
          setTimeout(() => {
            beat();
            entry.timers.push(setInterval(beat, heartbeatMs));
          }, Math.random() * heartbeatMs),
        );
        resolve();
      });
      ws.on('error', () => {});
      ws.on('close', () => {
        for (const timer of entry.timers) clearTimeout(timer);
        sockets.delete(entry);
        if (!registered) {
          stats.failed++;
          resolve();
        } else if (!closing) stats.closedUnexpectedly++;
      });
    });

  process.on('message', (message: OpenCommand | { cmd: 'closeAll' | 'recordAcks' | 'report' }) => {
    if (message.cmd === 'recordAcks') {
      recordAcks = true;
      return;
    }
    if (message.cmd === 'report') {
      process.send?.({ stats, ackMs });
      return;
    }
    if (message.cmd === 'closeAll') {
      closing = true;
      for (const { ws } of sockets) ws.close();
      const wait = setInterval(() => {
        if (sockets.size > 0) return;
        clearInterval(wait);
        closing = false;
        process.send?.({ closed: true, stats });
      }, 50);
      return;
    }
    if (message.cmd !== 'open') return;
    const work = message.users.flatMap(({ userId, token }) =>
      Array.from(
        { length: nodesPerUser },
        (_, j) => () => openOne(message.base, message.sources, userId, token, `n${j}`),
      ),
    );
    let next = 0;
    void Promise.all(
      Array.from({ length: openConcurrency }, async () => {
        while (next < work.length) await work[next++]!();
      }),
    ).then(() => process.send?.({ opened: true, stats }));
  });
  report.unref();
  process.send?.({ hello: true });
}

// ---------------------------------------------------------------- measuring

/**
 * Presence as stored, read without the adapter (whose reads delete what they find invisible):
 * entries, entries past their TTL, and whether the replica is live, by the Redis clock.
 */
async function rawPresence(redis: Redis, prefix: string, userIds: string[]) {
  const keys = redisKeys(prefix);
  const [seconds, micros] = await redis.time();
  const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
  const replicaExpiry = Number(await redis.zscore(keys.presenceReplicas(), 'bench-idle-gateway'));
  let entries = 0;
  let expired = 0;
  for (const userId of userIds) {
    for (const value of Object.values(await redis.hgetall(keys.presenceUser(userId)))) {
      entries++;
      if (Number(/^\[(\d+),/.exec(value)?.[1]) <= now) expired++;
    }
  }
  return { entries, expired, replicaLiveForMs: replicaExpiry - now };
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((c) => c.kill('SIGKILL'));
  // Checked before anything starts: a limit found too low after 10 minutes of opening helps no one.
  const [gatewayCommand, gatewayArgs] = withFileLimit(
    connections + SPARE_FILES,
    process.execPath,
    [
      '--expose-gc',
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      '--import',
      PRELOAD,
      'apps/gateway/dist/main.js',
    ],
    'the gateway',
  );
  const [clientCommand, clientArgs] = withFileLimit(
    Math.ceil(connections / clientProcesses) + SPARE_FILES,
    process.execPath,
    ['--import', 'tsx', SELF, 'clients'],
    'each client process',
  );
  const budgetMs =
    90_000 + openTimeoutMs + holdS * 1_000 + Math.max(heartbeatMs, pingIntervalMs) + 2_000;
  const watchdog = setTimeout(() => {
    console.error(
      `gateway-idle-connections: over its time budget (${budgetMs / 1_000} s); killing children`,
    );
    killAll();
    process.exit(1);
  }, budgetMs);
  watchdog.unref();
  process.once('SIGINT', () => {
    killAll();
    process.exit(130);
  });
  const prefix = uniquePrefix('bench-idle');
  let schema: TestSchema | undefined;
  try {
    const pair = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const keys = await importKeys(pair);
    schema = await createTestSchema('bench_idle');
    // The gateway reads its token cutoffs from the database every 2 s: give it the tables.
    await applyMigrations(
      loadConfig('gateway', {
        DATABASE_URL: databaseUrl,
        DATABASE_SCHEMA: schema.schema,
        REDIS_URL: redisUrl,
        JWT_PUBLIC_KEY: pair.publicKey,
      }),
      createLogger({ level: 'warn' }),
    );
    const port = await freePort();
    const gateway = spawn(gatewayCommand, gatewayArgs, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        HOST: '127.0.0.1',
        PORT: String(port),
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: prefix,
        DATABASE_URL: databaseUrl,
        DATABASE_SCHEMA: schema.schema,
        JWT_PUBLIC_KEY: pair.publicKey,
        INSTANCE_ID: 'bench-idle-gateway',
        GATEWAY_PING_INTERVAL_MS: String(pingIntervalMs),
        ...(process.env.REPLICA_TTL_MS
          ? { GATEWAY_REPLICA_TTL_MS: process.env.REPLICA_TTL_MS }
          : {}),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(gateway);
    const base = `ws://127.0.0.1:${port}`;
    for (let up = false; !up; await sleep(100)) {
      if (gateway.exitCode !== null) throw new Error(`the gateway exited with ${gateway.exitCode}`);
      up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
    }

    const clients = Array.from({ length: clientProcesses }, () =>
      spawn(clientCommand, clientArgs, {
        cwd: ROOT,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    children.push(...clients);
    await Promise.all(clients.map((c) => nextMessage(c, (m) => 'hello' in m, 30_000)));
    const latest = new Map<ChildProcess, ClientStats>();
    for (const c of clients)
      c.on('message', (m: { stats?: ClientStats }) => m.stats && latest.set(c, m.stats));
    const sum = (): ClientStats =>
      [...latest.values()].reduce<ClientStats>(
        (total, s) => ({
          registered: total.registered + s.registered,
          failed: total.failed + s.failed,
          closedUnexpectedly: total.closedUnexpectedly + s.closedUnexpectedly,
          pings: total.pings + s.pings,
          heartbeats: total.heartbeats + s.heartbeats,
          acks: total.acks + s.acks,
        }),
        { registered: 0, failed: 0, closedUnexpectedly: 0, pings: 0, heartbeats: 0, acks: 0 },
      );
    const tokensFor = async (names: string[]) =>
      Promise.all(
        names.map(async (userId) => ({
          userId,
          token: (await signAccessToken(keys, userId)).accessToken,
        })),
      );
    const open = async (users: Array<{ userId: string; token: string }>, timeoutMs: number) => {
      const share = Math.ceil(users.length / clients.length);
      const before = sum();
      const started = Date.now();
      // Progress on stderr: at 100,000 connections opening takes minutes.
      const progress = setInterval(() => {
        const now = sum();
        console.error(
          `  ${((Date.now() - started) / 1_000).toFixed(0)} s: ${now.registered - before.registered} of ${users.length * nodesPerUser} registered, ${now.failed - before.failed} failed`,
        );
      }, 10_000);
      await Promise.all(
        clients.map((c, k) => {
          const done = nextMessage(c, (m) => 'opened' in m, timeoutMs);
          c.send({
            cmd: 'open',
            base,
            sources,
            users: users.slice(k * share, (k + 1) * share),
          } satisfies OpenCommand);
          return done;
        }),
      ).finally(() => clearInterval(progress));
    };

    const cold = await sample(gateway);
    // Warm-up: the connection code paths run (and compile) before the baseline, then all close.
    await open(
      await tokensFor(
        Array.from({ length: Math.ceil(warmUpConnections / nodesPerUser) }, (_, i) => `warm-u${i}`),
      ),
      30_000,
    );
    await sleep(3_000);
    await Promise.all(
      clients.map((c) => {
        const closed = nextMessage(c, (m) => 'closed' in m, 30_000);
        c.send({ cmd: 'closeAll' });
        return closed;
      }),
    );
    await sleep(2_000);
    const baseline = await sample(gateway);
    const warm = sum();

    const users = await tokensFor(
      Array.from({ length: Math.ceil(connections / nodesPerUser) }, (_, i) => `idle-u${i}`),
    );
    // Redis round trips seen from outside the gateway while it works, to attribute slow answers.
    // Also the replica's liveness margin: how close its heartbeat came to the replica TTL.
    const probe = createRedis(redisUrl, { name: 'bench-probe' });
    let redisMaxMs = 0;
    let replicaMarginMs = Infinity;
    const prober = setInterval(() => {
      const t0 = performance.now();
      void probe
        .multi()
        .time()
        .zscore(redisKeys(prefix).presenceReplicas(), 'bench-idle-gateway')
        .exec()
        .then((replies) => {
          redisMaxMs = Math.max(redisMaxMs, performance.now() - t0);
          const [seconds, micros] = replies?.[0]?.[1] as [string, string];
          const now = Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
          replicaMarginMs = Math.min(replicaMarginMs, Number(replies?.[1]?.[1] ?? 0) - now);
        });
    }, 250);
    await sample(gateway, false); // resets the event-loop delay histogram
    const connectStart = Date.now();
    await open(users, openTimeoutMs);
    const connectS = (Date.now() - connectStart) / 1_000;
    const connectSample = await sample(gateway, false);
    const samples: Array<{ t: number } & Sample> = [];
    for (const c of clients) c.send({ cmd: 'recordAcks' });
    const cpuStart = (cpuMs(gateway.pid!) ?? 0) / 1_000;
    const holdStart = Date.now();
    for (let t = 0; t < holdS;) {
      const step = Math.min(15, holdS - t);
      await sleep(step * 1_000);
      t += step;
      // No forced GC while the clients time their heartbeats: its pause would be ours, not the gateway's.
      samples.push({ t, ...(await sample(gateway, false)) });
    }
    clearInterval(prober);
    await closeRedis(probe);
    const cpuPerS =
      ((cpuMs(gateway.pid!) ?? 0) / 1_000 - cpuStart) / ((Date.now() - holdStart) / 1_000);
    const peakRss = procStatus(gateway.pid!, 'VmHWM');
    const reports = await Promise.all(
      clients.map((c) => {
        const answer = nextMessage<{ stats: ClientStats; ackMs: number[] }>(
          c,
          (m) => 'ackMs' in m,
          30_000,
        );
        c.send({ cmd: 'report' });
        return answer;
      }),
    );
    const ackMs = reports.flatMap((r) => r.ackMs).sort((a, b) => a - b);
    const ackP = (p: number) =>
      (ackMs[Math.min(ackMs.length - 1, Math.ceil((p / 100) * ackMs.length) - 1)] ?? NaN).toFixed(
        1,
      );
    const final = await sample(gateway);
    const all = sum();
    const totals: ClientStats = {
      registered: all.registered - warm.registered,
      failed: all.failed - warm.failed,
      closedUnexpectedly: all.closedUnexpectedly - warm.closedUnexpectedly,
      pings: all.pings - warm.pings,
      heartbeats: all.heartbeats - warm.heartbeats,
      acks: all.acks - warm.acks,
    };
    const held = totals.registered - totals.closedUnexpectedly;
    const replicaExpiredDuringRun = replicaMarginMs <= 0;

    const raw = createRedis(redisUrl, { name: 'bench-raw' });
    const stored = await rawPresence(
      raw,
      prefix,
      users.map((u) => u.userId),
    );
    await closeRedis(raw);
    const presence = createRedisPresence({ url: redisUrl, prefix });
    let inPresence = 0;
    for (const { userId } of users) inPresence += (await presence.listNodes(userId)).length;
    let recheck = '';
    if (inPresence !== held) {
      // Entries come back when their node next touches presence (heartbeat or pong).
      await sleep(Math.max(heartbeatMs, pingIntervalMs) + 2_000);
      let again = 0;
      for (const { userId } of users) again += (await presence.listNodes(userId)).length;
      recheck = ` (${again} again ${(Math.max(heartbeatMs, pingIntervalMs) + 2_000) / 1_000} s later)`;
    }
    await presence.close();
    const info = createRedis(redisUrl, { name: 'bench-info' });
    const redisVersion = /redis_version:(\S+)/.exec(await info.info('server'))?.[1] ?? '?';
    await closeRedis(info);

    const zero = baseline.memory;
    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    const kb = (n: number) => (n / 1024).toFixed(2);
    console.log(
      `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Redis ${redisVersion} at ${new URL(redisUrl).host}, load average (1 min) ${loadavg()[0]!.toFixed(1)}`,
    );
    console.log(
      `${held} connections held (${totals.failed} failed to open, ${totals.closedUnexpectedly} closed unexpectedly) from ${clientProcesses} client processes ` +
        `(source addresses ${sources.length > 0 ? `${sources[0]}–${sources.at(-1)}` : '127.0.0.1'}, open-file hard limit ${fileLimits().hard}); ` +
        `opened and registered in ${connectS.toFixed(1)} s (gateway event-loop delay meanwhile p99 ${connectSample.loop.p99.toFixed(0)} ms, max ${connectSample.loop.max.toFixed(0)} ms); ` +
        `presence: ${stored.entries} entries stored (${stored.expired} past their TTL, replica live for another ${stored.replicaLiveForMs} ms), listNodes returns ${inPresence} nodes of ${users.length} users${recheck}; ` +
        `slowest Redis round trip from outside during connect and hold ${redisMaxMs.toFixed(0)} ms; ` +
        `replica liveness margin (replica TTL left at its lowest) ${replicaMarginMs.toFixed(0)} ms`,
    );
    console.log(
      `heartbeats every ${heartbeatMs / 1000} s (${totals.heartbeats} sent, ${totals.acks} acknowledged, the rest in flight; ` +
        `round trip at full count p50 ${ackP(50)} ms, p99 ${ackP(99)} ms, max ${ackP(100)} ms over ${ackMs.length}), server pings every ${pingIntervalMs / 1000} s (${totals.pings} received); ` +
        `held ${holdS} s; gateway CPU while idle at full count: ${(cpuPerS * 100).toFixed(1)} % of one core; peak RSS ${mb(peakRss)} MB\n`,
    );
    console.log(
      '| gateway process | RSS (MB) | heap used (MB) | heap total (MB) | external (MB) | event-loop delay since previous row, p99 / max (ms) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    const row = (label: string, { memory: m, loop }: Sample) =>
      console.log(
        `| ${label} | ${mb(m.rss)} | ${mb(m.heapUsed)} | ${mb(m.heapTotal)} | ${mb(m.external)} | ${loop.p99.toFixed(0)} / ${loop.max.toFixed(0)} |`,
      );
    row('started, no connection yet', cold);
    row('baseline: 0 connections, after warm-up', baseline);
    for (const s of samples)
      row(`${held} connections, ${s.t} s after the last opened (no forced GC)`, s);
    row(`${held} connections, after the hold, after full GC`, final);
    const per = (key: keyof Memory) => kb((final.memory[key] - zero[key]) / held);
    console.log(
      `| **per connection** ((last − baseline) / ${held}, KB) | **${per('rss')}** | **${per('heapUsed')}** | ${per('heapTotal')} | ${per('external')} | |`,
    );
    if (replicaExpiredDuringRun) {
      console.log(
        '\nWARNING: the gateway missed its replica heartbeat deadline during the run (margin ≤ 0): its nodes were invisible meanwhile.',
      );
    }
    if (held !== connections || inPresence !== held) {
      console.log(
        `\nWARNING: expected ${connections} connections and as many presence entries; see above.`,
      );
      process.exitCode = 1;
    }
  } finally {
    const gateway = children[0];
    if (profileDir && gateway && gateway.exitCode === null) {
      // A graceful stop, so that --cpu-prof writes the profile.
      const exited = new Promise((resolve) => gateway.once('exit', resolve));
      gateway.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000)]);
    }
    killAll();
    await unlinkPrefix(redisUrl, prefix);
    await schema?.drop();
    clearTimeout(watchdog);
  }
}

if (process.argv[2] === 'clients') {
  runClients();
} else {
  await main();
  process.exit();
}

/**
 * Memory per idle node connection, the service's gateway against a Socket.IO 4 server, in the
 * same run: first `bench/gateway-idle-connections.ts` (ours, unchanged, its report printed as it
 * comes), then the same procedure against Socket.IO, then one table of both.
 *
 *   pnpm build && node --import tsx bench/peers/idle-connections.ts
 *
 * The Socket.IO side, built to match what the gateway does per node as far as Socket.IO goes:
 * - Server (this file, `BENCH_ROLE=sio-server`, started with `--expose-gc` and the same memory
 *   instrument as ours, `bench/support/memory-probe.ts`): Socket.IO with the Redis adapter (as a
 *   replica would run), `pingInterval` = PING_INTERVAL_MS like ours, each socket joins its user's
 *   room, keeps the `register` payload in `socket.data` and acknowledges it, and acknowledges
 *   every `heartbeat`. It verifies no token and writes no presence (ours does both).
 * - Clients: `socket.io-client` sockets (WebSocket transport, a connection each) in
 *   CLIENT_PROCESSES processes, OPEN_CONCURRENCY handshakes in flight each; each emits `register`
 *   (the same payload as ours) and a `heartbeat` every HEARTBEAT_MS with an acknowledgement, whose
 *   round trip is timed while the full count is held.
 * - Baseline: the same server after a warm-up of WARMUP_CONNECTIONS connections, all closed, full
 *   GC. Per connection = (after the hold, after full GC − baseline) / connections held.
 *
 * Env (passed to both): CONNECTIONS (default 10000), CLIENT_PROCESSES (2), HEARTBEAT_MS (20000),
 * PING_INTERVAL_MS (15000), HOLD_S (45), OPEN_CONCURRENCY (100), WARMUP_CONNECTIONS (200),
 * REDIS_URL, DATABASE_URL, SOURCE_ADDRESSES (loopback source addresses of the clients, as in
 * bench/gateway-idle-connections.ts: default one per 25,000 connections, 127.0.0.2 and up);
 * OURS=0 skips our side. Each server needs about CONNECTIONS open files and each client process
 * CONNECTIONS / CLIENT_PROCESSES: the script stops at once when `ulimit -n` is lower.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { uniquePrefix } from '../../packages/testing/src/index.js';
import {
  nextMessage,
  PRELOAD,
  sampleMemory,
  type Memory,
  type MemorySample,
} from '../support/memory-probe.js';
import { fileLimits, sourceAddresses } from '../support/connection-limits.js';
import { cpuMs, machineLine, procMemory, ROOT, sleep, startEntry } from '../support/processes.js';
import { unlinkPrefix } from '../support/redis.js';
import { ensurePeers, requirePeer } from './peers.js';

const SELF = fileURLToPath(import.meta.url);
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const connections = Number(process.env.CONNECTIONS ?? 10_000);
const clientProcesses = Number(process.env.CLIENT_PROCESSES ?? 2);
const heartbeatMs = Number(process.env.HEARTBEAT_MS ?? 20_000);
const pingIntervalMs = Number(process.env.PING_INTERVAL_MS ?? 15_000);
const holdS = Number(process.env.HOLD_S ?? 45);
const openConcurrency = Number(process.env.OPEN_CONCURRENCY ?? 100);
const warmUpConnections = Number(process.env.WARMUP_CONNECTIONS ?? 200);
const sources = sourceAddresses(
  connections,
  process.env.SOURCE_ADDRESSES ? Number(process.env.SOURCE_ADDRESSES) : undefined,
);

// ---------------------------------------------------------------- the few peer members used

interface SioSocket {
  readonly handshake: { auth: Record<string, unknown> };
  data: Record<string, unknown>;
  join(room: string): void;
  on(event: string, listener: (payload: unknown, ack: (answer: unknown) => void) => void): void;
}
interface SioModule {
  Server: new (
    server: ReturnType<typeof createServer>,
    options: Record<string, unknown>,
  ) => {
    adapter(adapter: unknown): void;
    on(event: 'connection', listener: (socket: SioSocket) => void): void;
  };
}
interface ClientSocket {
  readonly io: { on(event: 'ping', listener: () => void): void };
  on(event: 'connect' | 'disconnect', listener: (reason?: string) => void): void;
  on(event: 'connect_error', listener: (error: Error) => void): void;
  emitWithAck(event: string, payload: unknown): Promise<unknown>;
  disconnect(): void;
}

// ---------------------------------------------------------------- Socket.IO server (child)

function runServer(): void {
  const { Server } = requirePeer<SioModule>('socket.io');
  const { createAdapter } = requirePeer<{
    createAdapter(pub: unknown, sub: unknown, options: { key: string }): unknown;
  }>('@socket.io/redis-adapter');
  const { Redis } = requirePeer<{ Redis: new (url: string) => { duplicate(): unknown } }>(
    'ioredis',
  );
  const pub = new Redis(redisUrl);
  const http = createServer((_request, response) => response.end('ok'));
  const io = new Server(http, { pingInterval: pingIntervalMs });
  io.adapter(createAdapter(pub, pub.duplicate(), { key: process.env.SIO_KEY! }));
  io.on('connection', (socket) => {
    socket.join(`user:${String(socket.handshake.auth.userId)}`);
    socket.on('register', (payload, ack) => {
      socket.data.node = payload;
      ack({ type: 'registered' });
    });
    socket.on('heartbeat', (_payload, ack) => ack({ type: 'heartbeat_ack' }));
  });
  http.listen(Number(process.env.PORT), '127.0.0.1');
}

// ---------------------------------------------------------------- clients (child)

interface ClientStats {
  registered: number;
  failed: number;
  closedUnexpectedly: number;
  pings: number;
  heartbeats: number;
  acks: number;
}

function runClients(): void {
  const { io } = requirePeer<{ io(url: string, options: Record<string, unknown>): ClientSocket }>(
    'socket.io-client',
  );
  const sockets = new Set<{ socket: ClientSocket; timers: NodeJS.Timeout[] }>();
  const stats: ClientStats = {
    registered: 0,
    failed: 0,
    closedUnexpectedly: 0,
    pings: 0,
    heartbeats: 0,
    acks: 0,
  };
  const ackMs: number[] = [];
  let recordAcks = false;
  let closing = false;
  process.on('disconnect', () => process.exit(0));
  let opened = 0;
  const openOne = (url: string, userId: string, nodeId: string) =>
    new Promise<void>((resolve) => {
      const localAddress = sources.length > 0 ? sources[opened++ % sources.length] : undefined;
      const socket = io(url, {
        auth: { userId },
        transports: ['websocket'],
        forceNew: true,
        reconnection: false,
        ...(localAddress ? { localAddress } : {}),
      });
      const entry = { socket, timers: [] as NodeJS.Timeout[] };
      let registered = false;
      socket.io.on('ping', () => stats.pings++);
      socket.on('connect_error', () => {
        stats.failed++;
        resolve();
      });
      socket.on('disconnect', () => {
        for (const timer of entry.timers) clearTimeout(timer);
        sockets.delete(entry);
        if (registered && !closing) stats.closedUnexpectedly++;
      });
      socket.on('connect', () => {
        sockets.add(entry);
        void socket
          .emitWithAck('register', {
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
          })
          .then(() => {
            registered = true;
            stats.registered++;
            const beat = () => {
              stats.heartbeats++;
              const sent = performance.now();
              void socket
                .emitWithAck('heartbeat', { type: 'heartbeat', status: 'online', current_tasks: 0 })
                .then(() => {
                  stats.acks++;
                  if (recordAcks) ackMs.push(performance.now() - sent);
                });
            };
            entry.timers.push(
              setTimeout(() => {
                beat();
                entry.timers.push(setInterval(beat, heartbeatMs));
              }, Math.random() * heartbeatMs),
            );
            resolve();
          });
      });
    });
  process.on('message', (message: { cmd: string; url?: string; users?: string[] }) => {
    if (message.cmd === 'recordAcks') recordAcks = true;
    else if (message.cmd === 'report') process.send?.({ stats, ackMs });
    else if (message.cmd === 'closeAll') {
      closing = true;
      for (const { socket } of sockets) socket.disconnect();
      const wait = setInterval(() => {
        if (sockets.size > 0) return;
        clearInterval(wait);
        closing = false;
        process.send?.({ closed: true, stats });
      }, 50);
    } else if (message.cmd === 'open') {
      const work = message.users!.flatMap((userId) =>
        Array.from({ length: 10 }, (_, j) => () => openOne(message.url!, userId, `n${j}`)),
      );
      let next = 0;
      void Promise.all(
        Array.from({ length: openConcurrency }, async () => {
          while (next < work.length) await work[next++]!();
        }),
      ).then(() => process.send?.({ opened: true, stats }));
    }
  });
  process.send?.({ hello: true });
}

// ---------------------------------------------------------------- main

/** Runs our benchmark as it is and pulls the figures for the summary out of its report. */
async function runOurs(): Promise<Record<string, number> | undefined> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/gateway-idle-connections.ts'], {
    cwd: ROOT,
    env: process.env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    process.stdout.write(chunk);
  });
  await new Promise((resolve) => child.once('exit', resolve));
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? NaN);
  const perConnection = /\*\*per connection\*\*[^|]*\| \*\*([\d.]+)\*\* \| \*\*([\d.]+)\*\*/.exec(
    output,
  );
  if (!perConnection) return undefined;
  return {
    held: number(/(\d+) connections held/),
    rssKb: Number(perConnection[1]),
    heapKb: Number(perConnection[2]),
    p50: number(/round trip at full count p50 ([\d.]+) ms/),
    p99: number(/round trip at full count p50 [\d.]+ ms, p99 ([\d.]+) ms/),
    max: number(/round trip at full count p50 [\d.]+ ms, p99 [\d.]+ ms, max ([\d.]+) ms/),
    cpu: number(/idle at full count: ([\d.]+) %/),
    peakMb: number(/peak RSS ([\d.]+) MB/),
    openS: number(/opened and registered in ([\d.]+) s/),
  };
}

async function runSocketIo(): Promise<Record<string, number>> {
  const key = uniquePrefix('bench-sio-idle');
  const children: ChildProcess[] = [];
  try {
    const server = await startEntry(
      SELF,
      { BENCH_ROLE: 'sio-server', SIO_KEY: key, REDIS_URL: redisUrl },
      { execArgv: ['--expose-gc', '--import', 'tsx', '--import', PRELOAD], ipc: true },
    );
    children.push(server.child);
    const clients = Array.from({ length: clientProcesses }, () =>
      spawn(process.execPath, ['--import', 'tsx', SELF], {
        cwd: ROOT,
        env: { ...process.env, BENCH_ROLE: 'sio-clients' },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    children.push(...clients);
    await Promise.all(clients.map((c) => nextMessage(c, (m) => 'hello' in m, 30_000)));
    const all = async (cmd: Record<string, unknown>, reply: string, timeoutMs: number) =>
      Promise.all(
        clients.map((c) => {
          const answer = nextMessage<{ stats: ClientStats; ackMs: number[] }>(
            c,
            (m) => reply in m,
            timeoutMs,
          );
          c.send(cmd);
          return answer;
        }),
      );
    const open = (users: string[], timeoutMs: number) => {
      const share = Math.ceil(users.length / clients.length);
      return Promise.all(
        clients.map((c, k) => {
          const done = nextMessage<{ stats: ClientStats }>(c, (m) => 'opened' in m, timeoutMs);
          c.send({ cmd: 'open', url: server.url, users: users.slice(k * share, (k + 1) * share) });
          return done;
        }),
      );
    };
    const sum = (list: ClientStats[]) =>
      list.reduce<ClientStats>(
        (t, s) => ({
          registered: t.registered + s.registered,
          failed: t.failed + s.failed,
          closedUnexpectedly: t.closedUnexpectedly + s.closedUnexpectedly,
          pings: t.pings + s.pings,
          heartbeats: t.heartbeats + s.heartbeats,
          acks: t.acks + s.acks,
        }),
        { registered: 0, failed: 0, closedUnexpectedly: 0, pings: 0, heartbeats: 0, acks: 0 },
      );

    const cold = await sampleMemory(server.child);
    await open(
      Array.from({ length: Math.ceil(warmUpConnections / 10) }, (_, i) => `warm-u${i}`),
      30_000,
    );
    await sleep(3_000);
    const warm = sum((await all({ cmd: 'closeAll' }, 'closed', 30_000)).map((r) => r.stats));
    await sleep(2_000);
    const baseline = await sampleMemory(server.child);
    await sampleMemory(server.child, false);
    const started = Date.now();
    await open(
      Array.from({ length: Math.ceil(connections / 10) }, (_, i) => `idle-u${i}`),
      120_000 + Math.max(0, connections - 10_000) * 8,
    );
    const openS = (Date.now() - started) / 1_000;
    const connectSample = await sampleMemory(server.child, false);
    for (const c of clients) c.send({ cmd: 'recordAcks' });
    const cpuStart = cpuMs(server.child.pid!) ?? 0;
    const holdStart = Date.now();
    const samples: Array<{ t: number } & MemorySample> = [];
    for (let t = 0; t < holdS;) {
      const step = Math.min(15, holdS - t);
      await sleep(step * 1_000);
      t += step;
      samples.push({ t, ...(await sampleMemory(server.child, false)) });
    }
    const cpu = (((cpuMs(server.child.pid!) ?? 0) - cpuStart) / (Date.now() - holdStart)) * 100;
    const peak = procMemory(server.child.pid!, 'VmHWM');
    const reports = await all({ cmd: 'report' }, 'ackMs', 30_000);
    const final = await sampleMemory(server.child);
    const now = sum(reports.map((r) => r.stats));
    const totals = Object.fromEntries(
      Object.entries(now).map(([k, v]) => [k, v - warm[k as keyof ClientStats]]),
    ) as unknown as ClientStats;
    const held = totals.registered - totals.closedUnexpectedly;
    const ackMs = reports.flatMap((r) => r.ackMs).sort((a, b) => a - b);
    const at = (p: number) => ackMs[Math.min(ackMs.length - 1, Math.ceil(p * ackMs.length) - 1)]!;

    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    console.log(`\n## Socket.IO server, ${held} connections\n`);
    console.log(
      `${held} connections held (${totals.failed} failed to open, ${totals.closedUnexpectedly} closed unexpectedly); opened and registered in ${openS.toFixed(1)} s (server event-loop delay meanwhile p99 ${connectSample.loop.p99.toFixed(0)} ms, max ${connectSample.loop.max.toFixed(0)} ms); ` +
        `heartbeats every ${heartbeatMs / 1000} s (${totals.heartbeats} sent, ${totals.acks} acknowledged; round trip at full count p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${at(1).toFixed(1)} ms over ${ackMs.length}), ` +
        `engine.io pings every ${pingIntervalMs / 1000} s (${totals.pings} received); held ${holdS} s; server CPU while idle at full count: ${cpu.toFixed(1)} % of one core; peak RSS ${mb(peak)} MB\n`,
    );
    console.log(
      '| Socket.IO server process | RSS (MB) | heap used (MB) | heap total (MB) | external (MB) | event-loop delay since previous row, p99 / max (ms) |',
    );
    console.log('|---|---:|---:|---:|---:|---:|');
    const row = (label: string, { memory: m, loop }: MemorySample) =>
      console.log(
        `| ${label} | ${mb(m.rss)} | ${mb(m.heapUsed)} | ${mb(m.heapTotal)} | ${mb(m.external)} | ${loop.p99.toFixed(0)} / ${loop.max.toFixed(0)} |`,
      );
    row('started, no connection yet', cold);
    row('baseline: 0 connections, after warm-up', baseline);
    for (const s of samples) row(`${held} connections, ${s.t} s after the last opened`, s);
    row(`${held} connections, after the hold, after full GC`, final);
    const per = (k: keyof Memory) => (final.memory[k] - baseline.memory[k]) / held / 1024;
    console.log(
      `| **per connection** ((last − baseline) / ${held}, KB) | **${per('rss').toFixed(2)}** | **${per('heapUsed').toFixed(2)}** | ${per('heapTotal').toFixed(2)} | ${per('external').toFixed(2)} | |`,
    );
    return {
      held,
      rssKb: per('rss'),
      heapKb: per('heapUsed'),
      p50: at(0.5),
      p99: at(0.99),
      max: at(1),
      cpu,
      peakMb: peak / 1024 / 1024,
      openS,
    };
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await unlinkPrefix(redisUrl, key);
  }
}

async function main(): Promise<void> {
  const needed = Math.max(connections, Math.ceil(connections / clientProcesses)) + 200;
  if (fileLimits().soft < needed) {
    throw new Error(
      `the servers need ${needed} open files, above this shell's ulimit -n of ${fileLimits().soft}: raise it (as root for the hard limit, ulimit -Hn) or use fewer connections`,
    );
  }
  const versions = ensurePeers(['socket.io', 'socket.io-client', '@socket.io/redis-adapter']);
  console.log(`machine: ${machineLine()}`);
  console.log(`versions: ${versions.join(', ')}\n`);
  console.log(`## Ours: bench/gateway-idle-connections.ts\n`);
  const ours = process.env.OURS === '0' ? undefined : await runOurs();
  const sio = await runSocketIo();
  console.log(`\nmachine at the end: ${machineLine()}\n`);
  console.log(
    '| server | connections held | RSS per connection (KB) | heap used per connection (KB) | heartbeat round trip p50 / p99 / max (ms) | CPU while idle (% of a core) | peak RSS (MB) | open + register all (s) |',
  );
  console.log('|---|---:|---:|---:|---|---:|---:|---:|');
  const line = (name: string, r: Record<string, number>) =>
    console.log(
      `| ${name} | ${r.held} | ${r.rssKb!.toFixed(2)} | ${r.heapKb!.toFixed(2)} | ${r.p50!.toFixed(1)} / ${r.p99!.toFixed(0)} / ${r.max!.toFixed(0)} | ${r.cpu!.toFixed(1)} | ${r.peakMb!.toFixed(0)} | ${r.openS!.toFixed(1)} |`,
    );
  line('Socket.IO (baseline)', sio);
  if (ours) {
    line('ours', ours);
    console.log(
      `\nours ÷ Socket.IO: RSS per connection ${(ours.rssKb! / sio.rssKb!).toFixed(2)}×, heap used per connection ${(ours.heapKb! / sio.heapKb!).toFixed(2)}×, heartbeat p99 ${(ours.p99! / sio.p99!).toFixed(2)}×, idle CPU ${(ours.cpu! / sio.cpu!).toFixed(2)}×`,
    );
  }
}

if (process.env.BENCH_ROLE === 'sio-server') runServer();
else if (process.env.BENCH_ROLE === 'sio-clients') runClients();
else {
  await main();
  process.exit(0);
}

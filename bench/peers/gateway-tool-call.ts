/**
 * A tool call across replicas, the service's split path against Socket.IO 4 with
 * `@socket.io/redis-adapter`, in the same run, under the same open-loop load.
 *
 *   pnpm build && node --import tsx bench/peers/gateway-tool-call.ts
 *
 * - `Socket.IO` (baseline): two Socket.IO servers on the shared Redis through the Redis adapter.
 *   Server A lives in this process and is the caller: `io.to('user:<id>').timeout(ms)
 *   .emitWithAck('tools/call', …)`, the cross-server acknowledgement Socket.IO's docs recommend.
 *   Server B is a process of its own (this file, `BENCH_ROLE=sio-server`); the nodes are
 *   `socket.io-client` sockets (WebSocket transport only) in a fleet process (`BENCH_ROLE=sio-fleet`)
 *   connected to B, each in its user's room, answering the ack at once with `ok <i>`.
 * - `ours`: the caller (`createNodeToolCaller` on an API replica's Redis engines) in this process →
 *   Redis → the gateway process → a `ws` node in a fleet process (`bench/support/`), answering at
 *   once with `ok <i>`.
 * - `ours, presence read per call`: the same caller with its route cache off (`routeMaxAgeMs: 0`),
 *   one presence read (a Lua script) before each call: the path before the route cache.
 * - Three node servers (unless SKIP_THREE is set): Socket.IO with servers B, C, D holding the
 *   nodes (the adapter sends each call to every server) against ours with three gateway
 *   processes (each call goes to the one holding the node), the nodes spread over them in turn.
 * For each rate, the variants alternate round by round (drift on a shared machine hits both);
 * latency runs from the scheduled time of each call. CPU per call is user + system time from
 * /proc of every process on the path (this process, the server or gateway, the fleet, Redis).
 *
 * Then the failure case: a node holds a call (never answers) and its process is killed (SIGKILL)
 * while it does; measured is the time from the kill to the caller's answer, and what it was.
 *
 * Env: RATES (calls/s, default 1000,5000), DURATION_S (measured seconds per variant and rate,
 * default 10), ROUNDS (default 4), WARMUP_S (default 2), NODES (users with one node each, default
 * 10), CALL_TIMEOUT_MS (deadline of every call and Socket.IO's ack timeout, default 10000), DROPS
 * (failure-case repetitions per variant, default 3), REDIS_URL, DATABASE_URL.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createServer, type Server as HttpServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { uniquePrefix } from '../../packages/testing/src/index.js';
import { startFleet } from '../support/node-fleet.js';
import { fmt, openLoop, percentile, type RoundResult } from '../support/open-loop.js';
import {
  cpuMs,
  machineJiffies,
  machineLine,
  ROOT,
  startEntry,
  stopChild,
  sleep,
} from '../support/processes.js';
import { redisServer, unlinkPrefix } from '../support/redis.js';
import { startSplitGateway } from '../support/split-gateway.js';
import type { NodeToolCaller } from '../../packages/node-rpc/src/index.js';
import { ensurePeers, requirePeer } from './peers.js';

const SELF = fileURLToPath(import.meta.url);
const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const rates = (process.env.RATES ?? '1000,5000').split(',').map(Number);
const durationS = Number(process.env.DURATION_S ?? 10);
const rounds = Number(process.env.ROUNDS ?? 4);
const warmUpS = Number(process.env.WARMUP_S ?? 2);
const nodeCount = Number(process.env.NODES ?? 10);
const callTimeoutMs = Number(process.env.CALL_TIMEOUT_MS ?? 10_000);
const drops = Number(process.env.DROPS ?? 3);

// ---------------------------------------------------------------- the few peer members used

interface SioSocket {
  readonly handshake: { auth: Record<string, unknown> };
  join(room: string): void;
}
interface SioServer {
  adapter(adapter: unknown): void;
  on(event: 'connection', listener: (socket: SioSocket) => void): void;
  to(room: string): {
    timeout(ms: number): { emitWithAck(event: string, ...args: unknown[]): Promise<unknown[]> };
  };
  close(): Promise<void>;
}
interface SioModule {
  Server: new (server?: HttpServer, options?: Record<string, unknown>) => SioServer;
}
interface AdapterModule {
  createAdapter(pub: unknown, sub: unknown, options?: { key?: string }): unknown;
}
interface IoRedis {
  duplicate(): IoRedis;
  quit(): Promise<unknown>;
}
interface IoRedisModule {
  Redis: new (url: string) => IoRedis;
}
interface ClientSocket {
  on(event: 'connect', listener: () => void): void;
  on(event: 'connect_error', listener: (error: Error) => void): void;
  on(event: string, listener: (args: ToolCall, ack: (result: unknown) => void) => void): void;
}
interface ClientModule {
  io(url: string, options: Record<string, unknown>): ClientSocket;
}
interface ToolCall {
  name: string;
  arguments: { i?: number };
}
interface ToolResult {
  content: Array<{ type: string; text: string }>;
  isError: boolean;
}

/** A Socket.IO server on the shared Redis through the Redis adapter. */
function sioServer(key: string, http?: HttpServer): { io: SioServer; close(): Promise<void> } {
  const { Server } = requirePeer<SioModule>('socket.io');
  const { createAdapter } = requirePeer<AdapterModule>('@socket.io/redis-adapter');
  const { Redis } = requirePeer<IoRedisModule>('ioredis');
  const pub = new Redis(redisUrl);
  const sub = pub.duplicate();
  const io = new Server(http);
  io.adapter(createAdapter(pub, sub, { key }));
  io.on('connection', (socket) => socket.join(`user:${String(socket.handshake.auth.userId)}`));
  return {
    io,
    async close() {
      // Without an HTTP server of its own (server A), `close()` throws on the missing engine.
      await io.close().catch(() => undefined);
      await Promise.all([pub.quit(), sub.quit()]);
    },
  };
}

// ---------------------------------------------------------------- child roles

/** Server B: a Socket.IO server with the nodes, and `/healthz` for `startEntry`. */
function runSioServer(): void {
  const http = createServer((_request, response) => response.end('ok'));
  sioServer(process.env.SIO_KEY!, http);
  http.listen(Number(process.env.PORT), '127.0.0.1');
}

/** Socket.IO nodes: one per user, answering `tools/call` at once, never answering `hold`. */
function runSioFleet(): void {
  process.on('disconnect', () => process.exit(0));
  process.once('message', (message) => {
    const { urls, users } = message as { urls: string[]; users: string[] };
    const { io } = requirePeer<ClientModule>('socket.io-client');
    let ready = 0;
    for (const [i, userId] of users.entries()) {
      const socket = io(urls[i % urls.length]!, { auth: { userId }, transports: ['websocket'] });
      socket.on('connect_error', (error) => process.send?.({ error: error.message }));
      socket.on('tools/call', (call, ack) => {
        if (call.name === 'hold') {
          process.send?.({ holding: true });
          return;
        }
        ack({
          content: [{ type: 'text', text: `ok ${call.arguments.i}` }],
          isError: false,
        } satisfies ToolResult);
      });
      // Joined to its room on the server's `connection`, before the client sees `connect`.
      socket.on('connect', () => ++ready === users.length && process.send?.({ ready }));
    }
  });
}

/** The nodes of `users`, spread over the servers at `urls` in turn. */
function startSioFleet(urls: string[], users: string[]): Promise<ChildProcess> {
  const fleet = spawn(process.execPath, ['--import', 'tsx', SELF], {
    cwd: ROOT,
    env: { ...process.env, BENCH_ROLE: 'sio-fleet' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the Socket.IO fleet did not connect')),
      30_000,
    );
    fleet.on('message', (m: { ready?: number; error?: string }) => {
      if (m.error) console.error(`sio fleet: ${m.error}`);
      if (m.ready === users.length) {
        clearTimeout(timer);
        resolve(fleet);
      }
    });
    fleet.send({ urls, users });
  });
}

// ---------------------------------------------------------------- main

interface Variant {
  readonly name: string;
  readonly path: string;
  call(i: number): Promise<void>;
  readonly pids: Record<string, number>;
}

interface Pooled extends RoundResult {
  cpuMs: Record<string, number>;
  /** Busy and total jiffies of the whole machine over the rounds. */
  machine: { busy: number; total: number };
  roundP50s: number[];
}

/** Call numbers go on across groups and rates, so every call has its own `i`. */
let offset = 0;

/**
 * Measures `variants` at every rate, in alternating rounds, and prints a table with ratios to
 * the first one (the baseline) and the CPU per call of each process.
 */
async function measure(title: string, variants: Variant[]): Promise<void> {
  console.log(`\n${title}\n`);
  console.log(
    '| rate (calls/s) | variant | path | calls ok | errors | achieved (calls/s) | sustained | p50 (ms) | p99 (ms) | max (ms) | CPU per call (ms) | ÷ baseline: p50 / p99 / CPU (median per-round p50 ratio) |',
  );
  console.log('|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|');
  const breakdown: string[] = [];
  for (const rate of rates) {
    for (const v of variants) {
      await openLoop(v.call, rate, warmUpS, offset);
      offset += rate * warmUpS;
    }
    const pooled = variants.map((): Pooled => ({
      latenciesMs: [],
      errors: new Map(),
      ok: 0,
      elapsedMs: 0,
      cpuMs: {},
      roundP50s: [],
      machine: { busy: 0, total: 0 },
    }));
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < variants.length; k++) {
        const index = (k + round) % variants.length;
        const v = variants[index]!;
        const p = pooled[index]!;
        const before = Object.values(v.pids).map((pid) => cpuMs(pid) ?? 0);
        const machineBefore = machineJiffies();
        const result = await openLoop(v.call, rate, durationS / rounds, offset);
        offset += Math.round((rate * durationS) / rounds);
        const after = Object.values(v.pids).map((pid) => cpuMs(pid) ?? 0);
        const machineAfter = machineJiffies();
        p.machine.busy += machineAfter.busy - machineBefore.busy;
        p.machine.total += machineAfter.total - machineBefore.total;
        p.roundP50s.push(
          percentile(
            [...result.latenciesMs].sort((a, b) => a - b),
            50,
          ),
        );
        p.latenciesMs.push(...result.latenciesMs);
        for (const [code, n] of result.errors) p.errors.set(code, (p.errors.get(code) ?? 0) + n);
        p.ok += result.ok;
        p.elapsedMs += result.elapsedMs;
        Object.keys(v.pids).forEach(
          (role, j) => (p.cpuMs[role] = (p.cpuMs[role] ?? 0) + after[j]! - before[j]!),
        );
      }
    }
    const stats = pooled.map((p) => {
      const sorted = p.latenciesMs.sort((a, b) => a - b);
      const cpu = Object.values(p.cpuMs).reduce((a, b) => a + b, 0) / Math.max(1, p.ok);
      const achieved = (p.ok / p.elapsedMs) * 1_000;
      const p99 = percentile(sorted, 99);
      return {
        p50: percentile(sorted, 50),
        p99,
        max: sorted.at(-1) ?? NaN,
        cpu,
        achieved,
        sustained: p.errors.size === 0 && achieved >= 0.95 * rate && p99 < 1_000,
      };
    });
    variants.forEach((v, index) => {
      const p = pooled[index]!;
      const s = stats[index]!;
      const base = stats[0]!;
      const paired = p.roundP50s
        .map((p50, r) => p50 / pooled[0]!.roundP50s[r]!)
        .sort((a, b) => a - b);
      const ratio =
        index === 0
          ? 'baseline'
          : `${(s.p50 / base.p50).toFixed(2)}× / ${(s.p99 / base.p99).toFixed(2)}× / ${(s.cpu / base.cpu).toFixed(2)}× (${percentile(paired, 50).toFixed(2)}×)`;
      const errors = [...p.errors].map(([code, n]) => `${n} ${code}`).join(', ') || '0';
      console.log(
        `| ${rate} | ${v.name} | ${v.path} | ${p.ok} | ${errors} | ${fmt(s.achieved)} | ${s.sustained ? 'yes' : 'no'} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.max)} | ${s.cpu.toFixed(3)} | ${ratio} |`,
      );
      const parts = Object.entries(p.cpuMs).map(
        ([role, ms]) =>
          `${role} ${(ms / Math.max(1, p.ok)).toFixed(3)} (${((ms / p.elapsedMs) * 100).toFixed(0)} % of a core)`,
      );
      const busy = ((p.machine.busy / Math.max(1, p.machine.total)) * 100).toFixed(0);
      breakdown.push(`- ${rate}/s, ${v.name}: ${parts.join(', ')}; whole machine ${busy} % busy`);
    });
  }
  console.log(`\nmachine after the load: ${machineLine()}`);
  console.log(
    "\nCPU per call by process (ms; in brackets: the process's busy share of one core while measured):\n",
  );
  console.log(breakdown.join('\n'));
}

const check = (i: number, text: string | undefined) => {
  if (text !== `ok ${i}`) throw new Error(`wrong result for call ${i}: ${text}`);
};

/** A call through `server` (a Socket.IO server that is the caller) to the user's room. */
async function sioCall(server: SioServer, userId: string, call: ToolCall): Promise<ToolResult> {
  const responses = await server
    .to(`user:${userId}`)
    .timeout(callTimeoutMs)
    .emitWithAck('tools/call', call);
  if (responses.length === 0)
    throw Object.assign(new Error('no node in the room'), { code: 'no_node' });
  return responses[0] as ToolResult;
}

/** Socket.IO server processes on one adapter key, with their `/healthz`. */
function startSioServers(key: string, count: number) {
  return Promise.all(
    Array.from({ length: count }, () =>
      startEntry(
        SELF,
        { BENCH_ROLE: 'sio-server', SIO_KEY: key, REDIS_URL: redisUrl },
        { execArgv: ['--import', 'tsx'] },
      ),
    ),
  );
}

async function main(): Promise<void> {
  const versions = ensurePeers([
    'socket.io',
    'socket.io-client',
    '@socket.io/redis-adapter',
    'ioredis',
  ]);
  const cleanups: Array<() => Promise<unknown>> = [];
  const children: ChildProcess[] = [];
  process.once('SIGINT', () => {
    for (const child of children) child.kill('SIGKILL');
    process.exit(130);
  });
  /** Our caller and `count` gateway processes, and Socket.IO's caller (server A) and `count` servers. */
  const setUp = async (count: number) => {
    const split = await startSplitGateway({
      redisUrl,
      databaseUrl,
      defaultTimeoutMs: callTimeoutMs,
      gateways: count,
    });
    children.push(...split.gateways.map((g) => g.child));
    cleanups.push(() => split.close());
    const fleet = await startFleet(await split.targets(users));
    children.push(fleet);
    cleanups.push(() => stopChild(fleet));
    const key = uniquePrefix('bench-sio');
    cleanups.push(() => unlinkPrefix(redisUrl, key));
    const servers = await startSioServers(key, count);
    children.push(...servers.map((server) => server.child));
    cleanups.push(() => Promise.all(servers.map((server) => server.stop())));
    const serverA = sioServer(key);
    cleanups.push(() => serverA.close());
    const sioFleet = await startSioFleet(
      servers.map((server) => server.url),
      users,
    );
    children.push(sioFleet);
    cleanups.push(() => stopChild(sioFleet));
    await sleep(500); // the adapters' subscriptions settle
    return { split, fleet, servers, serverA, sioFleet };
  };
  const users = Array.from({ length: nodeCount }, (_, i) => `bench-u${i}`);
  try {
    const redis = await redisServer(redisUrl);
    const redisRole: Record<string, number> = redis.pid ? { redis: redis.pid } : {};
    const one = await setUp(1);
    const ourVariant = (
      name: string,
      path: string,
      caller: NodeToolCaller,
      at: typeof one,
    ): Variant => ({
      name,
      path,
      call: async (i) => {
        const result = await caller.callTool({
          userId: users[i % users.length]!,
          nodeType: 'desktop',
          toolName: 'echo',
          arguments: { i },
          timeoutMs: callTimeoutMs,
        });
        check(i, result.success ? result.text : undefined);
      },
      pids: {
        'bench (caller)': process.pid,
        ...Object.fromEntries(at.split.gateways.map((g, n) => [`gateway ${n + 1}`, g.child.pid!])),
        fleet: at.fleet.pid!,
        ...redisRole,
      },
    });
    const sioVariant = (name: string, path: string, at: typeof one): Variant => ({
      name,
      path,
      call: async (i) => {
        const result = await sioCall(at.serverA.io, users[i % users.length]!, {
          name: 'echo',
          arguments: { i },
        });
        check(i, result.content[0]?.text);
      },
      pids: {
        'bench (server A)': process.pid,
        ...Object.fromEntries(at.servers.map((s, n) => [`server ${n + 1}`, s.child.pid!])),
        fleet: at.sioFleet.pid!,
        ...redisRole,
      },
    });

    console.log(`machine: ${machineLine()}`);
    console.log(
      `versions: ${versions.join(', ')}; Redis ${redis.version} at ${new URL(redisUrl).host}`,
    );
    console.log(
      `open loop, ${nodeCount} users × 1 node, ${durationS} s per variant and rate in ${rounds} alternating rounds after ${warmUpS} s warm-up; deadline / ack timeout ${callTimeoutMs} ms; LOG_LEVEL=warn`,
    );
    await measure('One node server (gateway) each:', [
      sioVariant('Socket.IO', 'server A (caller) → Redis adapter → server B → node', one),
      ourVariant(
        'ours, presence read per call',
        'caller → presence read → Redis → gateway process → node',
        one.split.uncachedCaller,
        one,
      ),
      ourVariant(
        'ours',
        'caller (cached route) → Redis → gateway process → node',
        one.split.caller,
        one,
      ),
    ]);
    if (!process.env.SKIP_THREE) {
      const three = await setUp(3);
      await measure('Three node servers (gateways) each, the nodes spread over them:', [
        sioVariant(
          'Socket.IO, 3 servers',
          'server A (caller) → Redis adapter → servers B, C, D → node',
          three,
        ),
        ourVariant(
          'ours, 3 gateways',
          "caller (cached route) → Redis → the node's gateway → node",
          three.split.caller,
          three,
        ),
      ]);
    }
    const { split, servers } = one;
    const serverB = servers[0]!;

    // The failure case: the node's process dies while it holds a call.
    console.log(
      `\nNode dropped mid-call (its process SIGKILLed while it holds the call; deadline / ack timeout ${callTimeoutMs} ms):\n`,
    );
    console.log(
      "| variant | drops | time from the kill to the caller's answer, each (ms) | what the caller got |",
    );
    console.log('|---|---:|---|---|');
    const dropUser = 'bench-drop';
    const dropTimes = new Map<string, number[]>([
      ['Socket.IO', []],
      ['ours', []],
    ]);
    const dropAnswers = new Map<string, Set<string>>([
      ['Socket.IO', new Set()],
      ['ours', new Set()],
    ]);
    for (let d = 0; d < drops; d++) {
      for (const name of ['Socket.IO', 'ours']) {
        const holder =
          name === 'ours'
            ? await startFleet(await split.targets([dropUser]))
            : await startSioFleet([serverB.url], [dropUser]);
        const holding = new Promise<void>((resolve) =>
          holder.on('message', (m: { holding?: unknown }) => m.holding !== undefined && resolve()),
        );
        const call =
          name === 'ours'
            ? split.caller.callTool({
                userId: dropUser,
                nodeType: 'desktop',
                toolName: 'hold',
                arguments: {},
                timeoutMs: callTimeoutMs,
              })
            : sioCall(one.serverA.io, dropUser, { name: 'hold', arguments: {} });
        const answered = call.then(
          (result) => `resolved: ${JSON.stringify(result).slice(0, 80)}`,
          (error: Error & { code?: string }) =>
            `rejected: ${[error.code, error.message].filter(Boolean).join(': ')}`,
        );
        await holding;
        const killedAt = performance.now();
        holder.kill('SIGKILL');
        const answer = await answered;
        dropTimes.get(name)!.push(performance.now() - killedAt);
        dropAnswers.get(name)!.add(answer);
        await new Promise((resolve) =>
          holder.exitCode === null && holder.signalCode === null
            ? holder.once('exit', resolve)
            : resolve(null),
        );
        await sleep(300); // the next node of this user registers afresh
      }
    }
    for (const [name, times] of dropTimes) {
      console.log(
        `| ${name} | ${times.length} | ${times.map((t) => fmt(t)).join(', ')} | ${[...dropAnswers.get(name)!].join('; ')} |`,
      );
    }
  } finally {
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => console.error('cleanup failed:', error));
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

if (process.env.BENCH_ROLE === 'sio-server') runSioServer();
else if (process.env.BENCH_ROLE === 'sio-fleet') runSioFleet();
else {
  await main();
  process.exit(0);
}

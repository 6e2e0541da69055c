/**
 * A process of node clients for bench/gateway-100k.ts: `NodeClient`s of the SDK (its jittered
 * reconnect backoff included), bound to one source address, each a desktop node with an `echo`
 * tool. Started with `startSwarm`; reports counts over IPC every second and heartbeat round
 * trips (`heartbeat` sent → `heartbeat_ack` received) when asked.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { importKeys, signAccessToken } from '../../packages/auth/src/index.js';
import { NodeClient } from '../../packages/node-client/src/index.js';

export interface SwarmOrder {
  url: string;
  localAddress: string;
  /** Users `bench-u<from>` … `bench-u<to - 1>`, `nodesPerUser` nodes each. */
  from: number;
  to: number;
  nodesPerUser: number;
  publicKey: string;
  privateKey: string;
  /** New connections a second while ramping up. */
  connectRate: number;
  heartbeatMs: number;
}

export interface SwarmReport {
  registered: number;
  connects: number;
  disconnects: number;
  /** Clients that gave up (a final close code), by reason. */
  stopped: Record<string, number>;
  /** Disconnections by close code. */
  codes: Record<string, number>;
}

async function runSwarm(order: SwarmOrder): Promise<void> {
  const keys = await importKeys({ publicKey: order.publicKey, privateKey: order.privateKey });
  const clients: NodeClient[] = [];
  let registered = 0;
  let connects = 0;
  let disconnects = 0;
  let rtts: number[] = [];
  const stopped: Record<string, number> = {};
  const codes: Record<string, number> = {};
  const report = () => process.send?.({ registered, connects, disconnects, stopped, codes });
  setInterval(report, 1_000).unref();
  process.on('message', (message: { rtts?: boolean }) => {
    if (message.rtts) {
      process.send?.({ rtts });
      rtts = [];
    }
  });
  process.on('disconnect', () => process.exit(0));
  const start = Date.now();
  let n = 0;
  for (let u = order.from; u < order.to; u++) {
    const userId = `bench-u${u}`;
    const token = (await signAccessToken(keys, userId)).accessToken;
    for (let k = 0; k < order.nodesPerUser; k++) {
      const client = new NodeClient({
        url: order.url,
        kind: 'desktop',
        userId,
        nodeId: `desktop_${userId}_${k}`,
        token,
        localAddress: order.localAddress,
        heartbeatMs: order.heartbeatMs,
        node: { name: 'bench' },
        tools: { echo: { handler: (args) => `ok ${String(args.i)}` } },
      });
      let sentAt = 0;
      let up = false;
      client.on('registered', () => {
        up = true;
        registered++;
        connects++;
      });
      client.on('stopped', ({ error }) => {
        const key = error.code ?? error.message;
        stopped[key] = (stopped[key] ?? 0) + 1;
      });
      client.on('disconnected', ({ code, httpStatus }) => {
        const key = `${code}${httpStatus ? `/${httpStatus}` : ''}`;
        codes[key] = (codes[key] ?? 0) + 1;
        if (up) registered--;
        up = false;
        disconnects++;
      });
      client.on('error', () => undefined);
      client.on('heartbeat', () => (sentAt = performance.now()));
      client.on('heartbeatAck', () => {
        if (sentAt > 0) rtts.push(performance.now() - sentAt);
        sentAt = 0;
      });
      void client.start();
      clients.push(client);
      // Ramp: at most connectRate new sockets a second.
      const due = start + (++n * 1_000) / order.connectRate;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    }
  }
  report();
}

/** Forks a swarm process (with an fd limit as high as allowed) running `order`. */
export function startSwarm(order: SwarmOrder, onReport: (r: SwarmReport) => void): ChildProcess {
  const child = fork(fileURLToPath(import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.on('message', (message: SwarmReport | { rtts: number[] }) => {
    if ('registered' in message) onReport(message);
  });
  child.send(order);
  return child;
}

/** Heartbeat round trips collected since the last ask, in ms. */
export function askRtts(child: ChildProcess): Promise<number[]> {
  return new Promise((resolve) => {
    const listener = (message: { rtts?: number[] }) => {
      if (!message.rtts) return;
      child.off('message', listener);
      resolve(message.rtts);
    };
    child.on('message', listener);
    child.send({ rtts: true });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.once('message', (order: SwarmOrder) => void runSwarm(order));
}

/**
 * Starting, stopping and metering the processes a benchmark runs: built service entries on a
 * free port, CPU time from /proc, the machine line every benchmark prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The repository root: built entries are started from here. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** USER_HZ on Linux: /proc/<pid>/stat counts CPU time in these ticks. */
const CLK_TCK = 100;

export interface Service {
  readonly child: ChildProcess;
  readonly url: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the process exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts a built entry (or any script, with `execArgv`) on a free port with only the given
 * environment (plus PATH, HOME, HOST, PORT) and waits until `/healthz` answers.
 */
export async function startEntry(
  entry: string,
  env: Record<string, string>,
  options: { execArgv?: string[]; ipc?: boolean } = {},
): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(options.execArgv ?? []), entry], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      ...env,
    },
    stdio: options.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) =>
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean).slice(-20));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`${entry} exited with ${child.exitCode}:\n${output.slice(-20).join('\n')}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(
        `${entry} did not answer /healthz within 60 s:\n${output.slice(-20).join('\n')}`,
      );
    }
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, url, stop: () => stopChild(child) };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** CPU time (user + system) of a process so far, in ms; undefined if it cannot be read. */
export function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000) / CLK_TCK;
  } catch {
    return undefined;
  }
}

/** Resident set size (or its peak, `VmHWM`) of a process, in bytes. */
export function procMemory(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  );
  return Number(match?.[1] ?? NaN) * 1024;
}

/** `cores × cpu model, load average 1/5/15 min, Node version`: the conditions of a run. */
export function machineLine(): string {
  const [one, five, fifteen] = loadavg().map((n) => n.toFixed(2));
  return `${cpus().length} × ${cpus()[0]?.model ?? '?'}, load average ${one} / ${five} / ${fifteen}, Node ${process.version}`;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Jiffies of the whole machine so far (all CPUs): busy and total, from /proc/stat. */
export function machineJiffies(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
  const values = fields.map(Number);
  const total = values.reduce((a, b) => a + b, 0);
  // idle + iowait
  return { busy: total - values[3]! - (values[4] ?? 0), total };
}

/**
 * The environment of our api (or all-in-one) in a bench where one user makes every request:
 * the per-user limits off (they would refuse most requests), the signing keys `pair`, the
 * scripted model on loopback allowed, warnings only.
 */
export function oneUserApiEnv(pair: { publicKey: string; privateKey: string }) {
  return {
    RATE_LIMIT_INVOKE_PER_MINUTE: '0',
    MAX_CONCURRENT_RUNS_PER_USER: '0',
    MAX_OPEN_STREAMS_PER_USER: '0',
    JWT_PUBLIC_KEY: pair.publicKey,
    JWT_PRIVATE_KEY: pair.privateKey,
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    LOG_LEVEL: 'warn',
  };
}

/** Where our invoke-serving process keeps its state in a bench (see {@link invokeService}). */
export type InvokeStore =
  | { readonly dataDir: string }
  | {
      readonly redisUrl: string;
      readonly prefix: string;
      readonly databaseUrl: string;
      readonly schema: string;
    };

/**
 * The entry (under `tree`, a checkout's root ending in `/` or empty for this one) and the store
 * environment of the process that serves `/api/agent/invoke` in a bench: with a `dataDir` the
 * all-in-one as `npm start` runs it (PGlite in DATA_DIR, no Redis), otherwise the api role on
 * Redis and PostgreSQL.
 */
export function invokeService(
  tree: string,
  store: InvokeStore,
): { entry: string; env: Record<string, string> } {
  if ('dataDir' in store)
    return { entry: `${tree}apps/all-in-one/dist/main.js`, env: { DATA_DIR: store.dataDir } };
  return {
    entry: `${tree}apps/api/dist/main.js`,
    env: {
      REDIS_URL: store.redisUrl,
      REDIS_KEY_PREFIX: store.prefix,
      DATABASE_URL: store.databaseUrl,
      DATABASE_SCHEMA: store.schema,
    },
  };
}

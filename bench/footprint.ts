/**
 * Memory footprint of each role when idle: starts the role's built entry with only the
 * environment it needs, waits for `/healthz`, idles IDLE_S seconds and reports VmRSS, VmHWM (the
 * peak, mostly during start), the process's threads, and its largest resident mappings from
 * /proc/<pid>/smaps. The all-in-one runs with REDIS_URL and DATABASE_URL unset (PGlite in a
 * temporary DATA_DIR, in-process bus and queues), as `npm start` does; the split roles (api,
 * gateway, worker) against the local Redis and PostgreSQL (one fresh schema each). ROUNDS rounds,
 * each role once per round, one process at a time. RSS is not a timing figure, so a busy machine
 * changes it little; still, the load average is printed.
 *
 *   node scripts/build.mjs && node --import tsx bench/footprint.ts
 *
 * Two floors are measured the same way when listed in ROLES: `node` (a bare
 * `node -e "setInterval(() => {}, 1000)"`) and `express-ioredis` (bench/support/floor-service.mjs:
 * express answering `/healthz` with one ioredis connection, nothing of ours).
 *
 * Env: ROLES (default `node,express-ioredis,all-in-one,api,gateway,worker`), ROUNDS (default 2), IDLE_S (default 15),
 * MAPPINGS (largest resident mappings to list, default 6), REDIS_URL (default
 * redis://127.0.0.1:6379), DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), and
 * EXTRA_ENV (`A=1,B=2`: added to every role's environment, to compare a setting), EXEC_ARGV
 * (Node or V8 flags for every role, space-separated, e.g. `--liftoff-only`), SERVICE_DEFAULTS
 * (default 1: every process, floors included, starts with what `npm start` gives a service,
 * scripts/service-defaults.mjs: `--max-semi-space-size=4` and `MALLOC_TRIM_THRESHOLD_=131072`,
 * before EXEC_ARGV and EXTRA_ENV; `0` measures Node's own defaults).
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestSchema, uniquePrefix } from '../packages/testing/src/index.js';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../scripts/service-defaults.mjs';
import { machineLine, procMemory, sleep, startEntry, stopChild } from './support/processes.js';
import { unlinkPrefix } from './support/redis.js';

const redisUrl = (process.env.REDIS_URL ??= 'redis://127.0.0.1:6379');
const databaseUrl = (process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test');
const ROLES = (process.env.ROLES ?? 'node,express-ioredis,all-in-one,api,gateway,worker').split(
  ',',
);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const IDLE_S = Number(process.env.IDLE_S ?? 15);
const MAPPINGS = Number(process.env.MAPPINGS ?? 6);
const DEFAULTS = process.env.SERVICE_DEFAULTS !== '0';
const EXTRA_ENV: Record<string, string> = {
  ...(DEFAULTS ? SERVICE_ENV : {}),
  ...Object.fromEntries(
    (process.env.EXTRA_ENV ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  ),
};

const EXEC_ARGV = [
  ...(DEFAULTS ? SERVICE_NODE_FLAGS : []),
  ...(process.env.EXEC_ARGV ?? '').split(' ').filter(Boolean),
];

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

interface Mapping {
  name: string;
  rss: number;
}

/** Resident mappings of a process, largest first; anonymous ones named `[anon]`. */
function mappings(pid: number): Mapping[] {
  const found: Mapping[] = [];
  let current: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      current = { name: header[1] || '[anon]', rss: 0 };
      found.push(current);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) current.rss = Number(rss[1]) * 1024;
  }
  return found.sort((a, b) => b.rss - a.rss);
}

/** Thread names of a process with their counts: `node ×1, WorkerThread ×1, V8Worker ×4`. */
function threads(pid: number): string {
  const counts = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts].map(([name, n]) => `${name} ×${n}`).join(', ');
}

/** The built entry of a role, or a floor's script. */
const ENTRIES: Record<string, string> = { 'express-ioredis': 'bench/support/floor-service.mjs' };

/** A bare Node process idling IDLE_S seconds: the floor under every role. */
async function measureBareNode(): Promise<string> {
  const child = spawn(process.execPath, [...EXEC_ARGV, '-e', 'setInterval(() => {}, 1000)'], {
    env: { ...process.env, ...EXTRA_ENV },
    stdio: 'ignore',
  });
  try {
    await sleep(IDLE_S * 1000);
    const pid = child.pid!;
    return `node: VmRSS ${mb(procMemory(pid))} MB, VmHWM ${mb(procMemory(pid, 'VmHWM'))} MB; threads ${threads(pid)}`;
  } finally {
    await stopChild(child);
  }
}

async function measure(role: string, env: Record<string, string>): Promise<string> {
  const service = await startEntry(
    ENTRIES[role] ?? `apps/${role}/dist/main.js`,
    { ...env, ...EXTRA_ENV },
    { execArgv: EXEC_ARGV },
  );
  try {
    const pid = service.child.pid!;
    await sleep(IDLE_S * 1000);
    const top = mappings(pid)
      .slice(0, MAPPINGS)
      .map((m) => `${m.name.replace(/^.*\/node_modules\//, '')} ${mb(m.rss)}`)
      .join(', ');
    return `${role}: VmRSS ${mb(procMemory(pid))} MB, VmHWM ${mb(procMemory(pid, 'VmHWM'))} MB; threads ${threads(pid)}; largest mappings (MB): ${top}`;
  } finally {
    await service.stop();
  }
}

const pair = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const common = {
  JWT_PUBLIC_KEY: pair.publicKey,
  JWT_PRIVATE_KEY: pair.privateKey,
  LOG_LEVEL: 'warn',
};

console.log(`footprint after ${IDLE_S} s idle past /healthz, ${ROUNDS} rounds`);
console.log(machineLine());
if (Object.keys(EXTRA_ENV).length > 0) console.log(`extra env: ${JSON.stringify(EXTRA_ENV)}`);
if (EXEC_ARGV.length > 0) console.log(`node flags: ${EXEC_ARGV.join(' ')}`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const role of ROLES) {
    if (role === 'node') {
      console.log(`round ${round}, ${await measureBareNode()}`);
      continue;
    }
    if (role === 'express-ioredis') {
      console.log(`round ${round}, ${await measure(role, { REDIS_URL: redisUrl })}`);
      continue;
    }
    if (role === 'all-in-one') {
      const dataDir = mkdtempSync(join(tmpdir(), 'bench-footprint-'));
      try {
        console.log(`round ${round}, ${await measure(role, { ...common, DATA_DIR: dataDir })}`);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
      continue;
    }
    const schema = await createTestSchema('bench_footprint');
    const prefix = uniquePrefix('bench-footprint');
    try {
      const line = await measure(role, {
        ...common,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: prefix,
        DATABASE_URL: databaseUrl,
        DATABASE_SCHEMA: schema.schema,
      });
      console.log(`round ${round}, ${line}`);
    } finally {
      await schema.drop();
      await unlinkPrefix(redisUrl, prefix);
    }
  }
}

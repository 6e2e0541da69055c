/**
 * The all-in-one's start, builds side by side: for each tree in TREES, ROUNDS times, starts its
 * built all-in-one (PGlite in a fresh DATA_DIR, the service defaults of `npm start`), and
 * prints the time until `/healthz` answers, the process's CPU time (user + system, all threads)
 * at that moment, and its CPU time IDLE_S seconds later with no request sent: what starting
 * costs before the service answers and what it keeps doing in the background after.
 *
 *   TREES=/path/to/before,/path/to/after node --import tsx bench/start-cpu.ts
 *
 * Each tree must be built (`node scripts/build.mjs` in it). Env: TREES (default this checkout),
 * ROUNDS (default 3), IDLE_S (default 20).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../scripts/service-defaults.mjs';
import { cpuMs, machineLine, oneUserApiEnv, ROOT, sleep, startEntry } from './support/processes.js';

const trees = (process.env.TREES ?? ROOT).split(',').map((tree) => resolve(tree));
const rounds = Number(process.env.ROUNDS ?? 3);
const idleMs = Number(process.env.IDLE_S ?? 20) * 1_000;
const pair = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

console.log(`machine at the start: ${machineLine()}`);
for (let round = 1; round <= rounds; round++) {
  for (const tree of trees) {
    const dataDir = mkdtempSync(join(tmpdir(), 'bench-start-cpu-'));
    try {
      const started = performance.now();
      const service = await startEntry(
        `${tree}/apps/all-in-one/dist/main.js`,
        { DATA_DIR: dataDir, ...oneUserApiEnv(pair), ...SERVICE_ENV },
        { execArgv: [...SERVICE_NODE_FLAGS] },
      );
      const healthyMs = performance.now() - started;
      const pid = service.child.pid!;
      const atHealthy = cpuMs(pid) ?? NaN;
      await sleep(idleMs);
      const after = cpuMs(pid) ?? NaN;
      await service.stop();
      console.log(
        `round ${round}, ${tree}: healthy after ${healthyMs.toFixed(0)} ms; CPU ${atHealthy.toFixed(0)} ms then, ${after.toFixed(0)} ms ${idleMs / 1_000} s later`,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
console.log(`machine at the end: ${machineLine()}`);

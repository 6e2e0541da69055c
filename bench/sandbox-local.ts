/**
 * The local sandbox's cost per call: `execute_code` (python `print(1)`) through the bubblewrap
 * adapter, cold (a new sandbox: state directory, metadata, first call) and warm (the same
 * sandbox again), against the baseline of running the same code with a bare `bwrap` command
 * line with the same namespaces and binds (no limits, no files, no image collection), in the
 * same run. Both spawn the same Python; what the ratio shows is the adapter's own overhead.
 *
 *   node --import tsx bench/sandbox-local.ts
 *
 * Env: ROUNDS (default 5), CALLS (warm calls per round, default 20).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BubblewrapSandboxProvider, processLimitMode } from '../packages/sandbox/src/index.js';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CALLS = Number(process.env.CALLS ?? 20);
const root = mkdtempSync(join(tmpdir(), 'bench-sbx-'));
const work = join(root, 'work');
const tmp = join(root, 'tmp');
mkdirSync(work);
mkdirSync(tmp);
const provider = new BubblewrapSandboxProvider({ stateDir: join(root, 'state') });
const limits = { timeoutMs: 30_000, maxOutputBytes: 65_536 };
const spec = {
  metadata: { userId: 'bench', sessionId: 's', deployment: 'bench' },
  hostWorkingDirectory: work,
};

/** The baseline: one bare bwrap call with the adapter's namespaces and binds. */
function bare(): void {
  const result = spawnSync(
    'bwrap',
    [
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--uid',
      '65534',
      '--gid',
      '65534',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/bin',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--bind',
      tmp,
      '/tmp',
      '--bind',
      work,
      '/workspace',
      '--chdir',
      '/workspace',
      '--',
      'python3',
      '-c',
      'print(1)',
    ],
    { encoding: 'utf8' },
  );
  if (result.stdout !== '1\n') throw new Error(`bare bwrap failed: ${result.stderr}`);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

console.log(
  `# sandbox-local: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `process limit ${processLimitMode().kind}, ${ROUNDS} rounds x ${CALLS} warm calls`,
);
const cold: number[] = [];
const warm: number[] = [];
const baseline: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  let t0 = performance.now();
  const sandbox = await provider.create(spec);
  const first = await sandbox.runCode('python', 'print(1)', limits);
  cold.push(performance.now() - t0);
  if (first.stdout !== '1\n') throw new Error(`adapter failed: ${first.stderr}`);
  for (let i = 0; i < CALLS; i++) {
    t0 = performance.now();
    await sandbox.runCode('python', 'print(1)', limits);
    warm.push(performance.now() - t0);
    t0 = performance.now();
    bare();
    baseline.push(performance.now() - t0);
  }
  await provider.destroy(sandbox.id);
}
const base = median(baseline);
for (const [name, values] of [
  ['bare bwrap (baseline)', baseline],
  ['adapter, cold (create + first call)', cold],
  ['adapter, warm', warm],
] as const) {
  console.log(
    JSON.stringify({
      case: name,
      medianMs: Number(median(values).toFixed(1)),
      p90Ms: Number([...values].sort((a, b) => a - b)[Math.floor(values.length * 0.9)]!.toFixed(1)),
      vsBaseline: Number((median(values) / base).toFixed(2)),
    }),
  );
}

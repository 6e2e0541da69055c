/**
 * Variants of an open-loop benchmark measured in the same run: rounds that rotate the variants
 * (so drift on a shared machine hits them alike), CPU time of every process on each variant's
 * path, and the Markdown table with each variant's ratios to its baseline.
 */
import { loadavg } from 'node:os';
import { fmt, openLoop, percentile, type RoundResult } from './open-loop.js';
import { cpuMs } from './processes.js';

export interface Variant {
  readonly name: string;
  readonly path: string;
  readonly baseline?: string;
  /** Calls per second. */
  readonly rate: number;
  /** Measured seconds, split over the rounds. */
  readonly seconds: number;
  /** p50 of each round, to pair with the baseline's p50 of the same round. */
  readonly roundP50s: number[];
  call(i: number): Promise<void>;
  /** Processes on the path, by role, whose CPU time is charged to the variant (a role may sum several). */
  readonly pids: Record<string, number | number[]>;
  pooled: RoundResult & { cpuMs: Record<string, number> };
}

export const freshPool = (): Variant['pooled'] => ({
  latenciesMs: [],
  errors: new Map<string, number>(),
  ok: 0,
  elapsedMs: 0,
  cpuMs: {},
});

const roleCpu = (pids: number | number[]) =>
  [pids].flat().reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0);

/** Warms each variant up, then runs `rounds` rotating rounds; returns the 1-min loads seen. */
export async function runRounds(
  variants: Variant[],
  rounds: number,
  warmUpS: number,
): Promise<number[]> {
  for (const variant of variants) await openLoop(variant.call, variant.rate, warmUpS, 1_000_000);
  const loads: number[] = [];
  let offset = 0;
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < variants.length; k++) {
      const variant = variants[(k + round) % variants.length]!;
      loads.push(loadavg()[0]!);
      const cpuBefore = Object.values(variant.pids).map(roleCpu);
      const result = await openLoop(variant.call, variant.rate, variant.seconds / rounds, offset);
      offset += Math.round((variant.rate * variant.seconds) / rounds);
      variant.roundP50s.push(
        percentile(
          [...result.latenciesMs].sort((a, b) => a - b),
          50,
        ),
      );
      const cpuAfter = Object.values(variant.pids).map(roleCpu);
      const p = variant.pooled;
      p.latenciesMs.push(...result.latenciesMs);
      for (const [key, n] of result.errors) p.errors.set(key, (p.errors.get(key) ?? 0) + n);
      p.ok += result.ok;
      p.elapsedMs += result.elapsedMs;
      Object.keys(variant.pids).forEach(
        (role, j) => (p.cpuMs[role] = (p.cpuMs[role] ?? 0) + cpuAfter[j]! - cpuBefore[j]!),
      );
    }
  }
  loads.push(loadavg()[0]!);
  return loads;
}

/** Prints the results table and the CPU per call of each process. */
export function printVariants(variants: Variant[]): void {
  console.log(
    '| variant | path | rate (calls/s) | calls ok | errors | achieved (calls/s) | p50 (ms) | p99 (ms) | max (ms) | p50 per round, min–max (ms) | CPU per call (ms, all processes on the path) | ÷ baseline: p50 / p99 / CPU (median of per-round p50 ratios) |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  const stats = new Map<string, { p50: number; p99: number; cpu: number }>();
  for (const v of variants) {
    const sorted = v.pooled.latenciesMs.sort((a, b) => a - b);
    const cpuTotal = Object.values(v.pooled.cpuMs).reduce((a, b) => a + b, 0);
    const s = {
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      cpu: cpuTotal / Math.max(1, v.pooled.ok),
    };
    stats.set(v.name, s);
    const base = v.baseline ? stats.get(v.baseline) : undefined;
    const baseVariant = variants.find((b) => b.name === v.baseline);
    const paired = baseVariant
      ? v.roundP50s.map((p50, r) => p50 / baseVariant.roundP50s[r]!).sort((a, b) => a - b)
      : [];
    const ratio = base
      ? `${(s.p50 / base.p50).toFixed(1)}× / ${(s.p99 / base.p99).toFixed(1)}× / ${(s.cpu / base.cpu).toFixed(1)}× (${percentile(paired, 50).toFixed(1)}×)`
      : 'baseline';
    const spread = `${fmt(Math.min(...v.roundP50s))}–${fmt(Math.max(...v.roundP50s))}`;
    const errors = [...v.pooled.errors].map(([k, n]) => `${n} ${k}`).join(', ') || '0';
    console.log(
      `| ${v.name} | ${v.path} | ${v.rate} | ${v.pooled.ok} | ${errors} | ${fmt((v.pooled.ok / v.pooled.elapsedMs) * 1_000)} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(sorted.at(-1) ?? NaN)} | ${spread} | ${fmt(s.cpu)} | ${ratio} |`,
    );
  }
  console.log('\nCPU per call by process (ms):\n');
  for (const v of variants) {
    const parts = Object.entries(v.pooled.cpuMs).map(
      ([role, ms]) => `${role} ${(ms / Math.max(1, v.pooled.ok)).toFixed(3)}`,
    );
    console.log(`- ${v.name}: ${parts.join(', ')}`);
  }
}

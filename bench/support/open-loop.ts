/** Open-loop load: calls issued on the clock's schedule, latency from the scheduled time. */
import { performance } from 'node:perf_hooks';

export interface RoundResult {
  latenciesMs: number[];
  errors: Map<string, number>;
  ok: number;
  elapsedMs: number;
}

/**
 * Issues `rate × seconds` calls on the clock's schedule without waiting for earlier ones, and
 * resolves when all settled. Latency runs from the scheduled time, so a late issue counts.
 */
export function openLoop(
  call: (i: number) => Promise<void>,
  rate: number,
  seconds: number,
  offset: number,
): Promise<RoundResult> {
  const total = Math.round(rate * seconds);
  const result: RoundResult = { latenciesMs: [], errors: new Map(), ok: 0, elapsedMs: 0 };
  return new Promise((resolve) => {
    const start = performance.now();
    let issued = 0;
    let settled = 0;
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1_000) + 1);
      while (issued < due) {
        const scheduled = start + (issued * 1_000) / rate;
        call(offset + issued++)
          .then(
            () => {
              result.latenciesMs.push(performance.now() - scheduled);
              result.ok++;
            },
            (error: unknown) => {
              const key = (error as { code?: string }).code ?? (error as Error).message;
              result.errors.set(key, (result.errors.get(key) ?? 0) + 1);
            },
          )
          .finally(() => {
            if (++settled === total) {
              result.elapsedMs = performance.now() - start;
              resolve(result);
            }
          });
      }
      if (issued < total) setTimeout(tick, 1);
    };
    tick();
  });
}

/** The p-th percentile (nearest rank) of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** 3 significant-ish digits: 0.123, 1.23, 12.3, 123. */
export function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}

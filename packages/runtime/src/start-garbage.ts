import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long after the service listens its start-up garbage is collected. */
export const START_GARBAGE_DELAY_MS = 1_000;

type Collect = (options?: { type?: 'major'; execution?: 'sync' | 'async' }) => unknown;

/**
 * Collects the garbage of start-up once, shortly after the service listens.
 *
 * Why: loading ~1,000-1,500 modules and building the configuration's and protocol's schemas leaves
 * several MB of garbage in the old generation and a young generation grown to its cap. An idle
 * process allocates next to nothing, so V8 never runs the full collection that would free it,
 * and its memory reducer (which shrinks the heap after a full collection when the process goes
 * quiet) is never started. One full collection frees the garbage and starts the reducer, which
 * gives the pages back about 8 s later: each split role idles 13-15 MB lower
 * (docs/BENCHMARKS.md, "Footprint"). It costs one collection of a heap of 30-40 MB, once.
 *
 * `gc` is reached without `--expose-gc` on the command line: the flag is set, a fresh context is
 * made (V8 installs `gc` in contexts made while the flag is on), and the flag is cleared again at
 * once, so no context or worker thread made later sees a `gc`. The service's own global never
 * has it.
 */
export async function collectStartGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc');
  let collect: Collect;
  try {
    collect = runInNewContext('gc') as Collect;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  // `async`: V8 runs the collection as a task of its own instead of inside this call.
  await collect({ type: 'major', execution: 'async' });
}

/** {@link collectStartGarbage} after {@link START_GARBAGE_DELAY_MS}, without keeping the process up. */
export function collectStartGarbageSoon(onError: (error: unknown) => void): void {
  setTimeout(() => {
    collectStartGarbage().catch(onError);
  }, START_GARBAGE_DELAY_MS).unref();
}

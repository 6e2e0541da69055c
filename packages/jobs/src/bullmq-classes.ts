import type * as Bullmq from 'bullmq';

/** What the adapter uses of BullMQ. */
export type BullmqClasses = Pick<
  typeof Bullmq,
  'Queue' | 'Worker' | 'UnrecoverableError' | 'WaitingError'
>;

/**
 * BullMQ's classes without the rest of its index: `import('bullmq')` also loads its PostgreSQL
 * backend (ten modules, ~390 kB of code and SQL), which a queue on Redis never uses, and which
 * keeps ~3 MB resident in every process that runs jobs (docs/BENCHMARKS.md, "Footprint"). The
 * package has no `exports` map and is pinned; `job-queue.bullmq.test.ts` fails if the path moves.
 */
const CLASSES = 'bullmq/dist/cjs/classes/index.js';

/** Loads BullMQ's classes (once: the module loader caches them). */
export async function loadBullmq(): Promise<BullmqClasses> {
  return (await import(CLASSES)) as BullmqClasses;
}

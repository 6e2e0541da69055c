import { splitText, type Chunk } from '@agent-backend/chunking';
import { htmlToText } from './html-text.js';
import type { SplitJob } from './split-document.js';

/**
 * {@link SplitJob} done in the calling thread: the splitting thread's work (`split-worker.ts`).
 * Kept out of `split-document.ts`, which the main thread loads, so htmlparser2 is only ever
 * loaded by the splitting thread (docs/BENCHMARKS.md, "Footprint").
 */
export function splitNow(job: SplitJob): Chunk[] {
  const text = job.type === 'html' ? htmlToText(job.content) : job.content;
  return splitText(text, job.options);
}

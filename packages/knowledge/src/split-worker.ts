/**
 * The splitting worker thread (see `split-document.ts`): receives `{ id, job }`, answers with
 * the chunks or the reason there are none.
 */
import { parentPort } from 'node:worker_threads';
import { ChunkLimitError } from '@agent-backend/chunking';
import type { SplitAnswer, SplitJob } from './split-document.js';
import { splitNow } from './split-now.js';

parentPort?.on('message', ({ id, job }: { id: number; job: SplitJob }) => {
  let answer: SplitAnswer;
  try {
    answer = { id, chunks: splitNow(job) };
  } catch (error) {
    answer = {
      id,
      error: error instanceof Error ? error.message : 'the document could not be split',
      ...(error instanceof ChunkLimitError
        ? { limit: { limit: error.limit, max: error.max } }
        : {}),
    };
  }
  parentPort!.postMessage(answer);
});

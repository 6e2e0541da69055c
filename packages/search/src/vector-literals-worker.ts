/**
 * The vector-literals worker thread (see `vector-literals.ts`): receives `{ id, values, lengths }`,
 * answers with the array text of each vector.
 */
import { parentPort } from 'node:worker_threads';
import { literalsNow, type LiteralsAnswer, type LiteralsJob } from './vector-literals.js';

parentPort?.on('message', ({ id, ...job }: LiteralsJob & { id: number }) => {
  const answer: LiteralsAnswer = { id, literals: literalsNow(job) };
  parentPort!.postMessage(answer);
});

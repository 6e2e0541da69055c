/**
 * The JSON body thread (see `json-body.ts`): decodes and parses a large body and checks its
 * text rules, so none of that CPU runs on the event loop. No body may end the thread: it serves
 * every user's large bodies, one after the other, and a task it dies on fails all that wait.
 */
import { parentPort } from 'node:worker_threads';
import type { BodyAnswer, BodyTask } from './json-body.js';
import { textProblems } from './text-rules.js';

function answerFor(id: number, bytes: ArrayBuffer): BodyAnswer {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return { id, ok: false };
  }
  const problems = textProblems(value);
  // A body with problems is refused on them alone. Its value is not posted back: the structured
  // clone recurses, and a value nested deeper than the bound (100,000 levels fit in 256 KiB)
  // overflows the thread's stack there, which ended the thread.
  return problems.length > 0
    ? { id, ok: true, value: undefined, problems }
    : { id, ok: true, value, problems };
}

parentPort?.on('message', ({ id, bytes }: BodyTask & { id: number }) => {
  let answer: BodyAnswer;
  try {
    answer = answerFor(id, bytes);
  } catch {
    answer = { id, ok: false, failed: true };
  }
  try {
    parentPort!.postMessage(answer);
  } catch {
    parentPort!.postMessage({ id, ok: false, failed: true } satisfies BodyAnswer);
  }
});

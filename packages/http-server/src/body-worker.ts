/**
 * The JSON body thread (see `json-body.ts`): decodes and parses a large body and checks its
 * text rules, so none of that CPU runs on the event loop.
 */
import { parentPort } from 'node:worker_threads';
import type { BodyAnswer, BodyTask } from './json-body.js';
import { textProblems } from './text-rules.js';

parentPort?.on('message', ({ id, bytes }: BodyTask & { id: number }) => {
  let answer: BodyAnswer;
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString('utf8'));
    answer = { id, ok: true, value, problems: textProblems(value) };
  } catch {
    answer = { id, ok: false };
  }
  parentPort!.postMessage(answer);
});

import { TaskThread } from '@agent-backend/threads';
import { AppError } from './errors.js';
import { textProblems, type TextProblem } from './text-rules.js';

/** A body to parse, its bytes moved (not copied) to the thread. */
export interface BodyTask {
  readonly bytes: ArrayBuffer;
}

/**
 * The parsed body and its text problems (without the value when there are problems: the request
 * is refused on them, and a value nested past the bound cannot be posted back), `ok: false` for
 * malformed JSON, or `failed` when the thread could not answer otherwise.
 */
export type BodyAnswer =
  | {
      readonly id: number;
      readonly ok: true;
      readonly value: unknown;
      readonly problems: TextProblem[];
    }
  | { readonly id: number; readonly ok: false; readonly failed?: true };

/**
 * Bodies at least this large are parsed on the body thread: a 10 MB JSON document takes about
 * 100 ms to decode, parse and check, which would stall every other request and stream of the
 * process. Smaller ones are parsed in place, where the hop would cost more than it
 * saves (about 2 ms per 256 KiB).
 */
export const OFF_THREAD_BODY_BYTES = 256 * 1024;

const bodyThread = new TaskThread<BodyTask, BodyAnswer>(
  new URL('./body-worker.js', import.meta.url),
  'JSON body',
);

/**
 * What a JSON body reads as: its value and text problems, or `undefined` when malformed. Throws
 * 503 `unavailable` when the body thread failed or died while holding the body (its bytes were
 * moved there, so they cannot be read again here); the next large body gets a new thread.
 */
export async function parseJsonBody(
  body: Buffer,
): Promise<{ value: unknown; problems: TextProblem[] } | undefined> {
  if (body.length < OFF_THREAD_BODY_BYTES) return parseHere(body);
  // A buffer of its own is moved to the thread; a slice of a shared one is copied first.
  const owned =
    body.byteOffset === 0 && body.byteLength === body.buffer.byteLength
      ? (body.buffer as ArrayBuffer)
      : body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength);
  let answer: BodyAnswer;
  try {
    answer = await bodyThread.run({ bytes: owned as ArrayBuffer }, [owned as ArrayBuffer]);
  } catch (error) {
    throw unreadable(error);
  }
  if (answer.ok) return { value: answer.value, problems: answer.problems };
  if (answer.failed) throw unreadable(undefined);
  return undefined;
}

function unreadable(cause: unknown): AppError {
  const error = new AppError('unavailable', 'the request body could not be read; try again');
  if (cause !== undefined) error.cause = cause;
  return error;
}

function parseHere(body: Buffer): { value: unknown; problems: TextProblem[] } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  return { value, problems: textProblems(value) };
}

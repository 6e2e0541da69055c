import { TaskThread } from '@agent-backend/threads';

/** A vector as PostgreSQL array text, in float4 precision. */
export function toArrayLiteral(vector: readonly number[]): string {
  return `{${vector.map((x) => Math.fround(x)).join(',')}}`;
}

/**
 * Vectors with fewer numbers than this in all are written in the calling thread: a few
 * milliseconds at most, less than handing them to the thread and back.
 */
const INLINE_NUMBERS = 20_000;

/** What the thread gets: every vector's numbers one after the other, and each one's length. */
export interface LiteralsJob {
  readonly values: Float32Array;
  /** Numbers per vector, in order; -1 for a vector that is null. */
  readonly lengths: Int32Array;
}

/** The thread's answer: one literal per vector, null where the vector was. */
export interface LiteralsAnswer {
  readonly id: number;
  readonly literals: Array<string | null>;
}

/** {@link LiteralsJob} done in the calling thread (the thread's work). */
export function literalsNow({ values, lengths }: LiteralsJob): Array<string | null> {
  const literals = new Array<string | null>(lengths.length);
  let offset = 0;
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    if (length < 0) {
      literals[i] = null;
      continue;
    }
    // A Float32Array's numbers print as Math.fround of the originals would.
    literals[i] = `{${values.subarray(offset, offset + length).join(',')}}`;
    offset += length;
  }
  return literals;
}

/**
 * Writing vectors as text is pure CPU: 500 vectors of 1536 numbers took 0.3-1.7 s on the
 * service's machine (bench/ingest-event-loop.ts), during which no request, stream or socket of
 * the process would be served. So large batches go to one worker thread, started on first use
 * and shared by the process, the numbers packed into one transferred Float32Array (float4
 * precision is all the column keeps).
 */
const thread = new TaskThread<LiteralsJob, LiteralsAnswer>(
  new URL('./vector-literals-worker.js', import.meta.url),
  'vector literals',
);

/** {@link toArrayLiteral} of each vector (null stays null), off the event loop when large. */
export async function toArrayLiterals(
  vectors: ReadonlyArray<readonly number[] | null>,
): Promise<Array<string | null>> {
  let total = 0;
  for (const vector of vectors) total += vector?.length ?? 0;
  if (total < INLINE_NUMBERS) return vectors.map((v) => (v ? toArrayLiteral(v) : null));
  const values = new Float32Array(total);
  const lengths = new Int32Array(vectors.length);
  let offset = 0;
  vectors.forEach((vector, i) => {
    lengths[i] = vector ? vector.length : -1;
    if (vector) {
      values.set(vector, offset);
      offset += vector.length;
    }
  });
  const answer = await thread.run({ values, lengths }, [values.buffer, lengths.buffer]);
  return answer.literals;
}

import { advanceCodePoints } from './code-points.js';
import { ChunkLimitError, type ResolvedSplitOptions } from './options.js';
import type { UnitList } from './units.js';

/** One chunk of a split text. */
export interface Chunk {
  /** Position of the chunk, from 0. */
  index: number;
  /** The chunk text: exactly `text.slice(start, end)`, never starting or ending in whitespace. */
  content: string;
  /** Characters (Unicode code points) in `content`; never more than the chunk size. */
  length: number;
  /** UTF-16 offset of `content` in the split text (what `String.prototype.slice` takes). */
  start: number;
  /** UTF-16 offset just after `content` in the split text. */
  end: number;
}

/**
 * Maps character positions inside runs to UTF-16 offsets. Positions asked for only grow, so
 * walking forward from the last answer keeps the whole pass linear.
 */
class RunCursor {
  private unit = -1;
  private cp = 0;
  private offset = 0;

  constructor(
    private readonly text: string,
    private readonly units: UnitList,
    private readonly surrogates: boolean,
  ) {}

  offsetOf(unit: number, cp: number): number {
    const { start16, cpStart } = this.units;
    if (!this.surrogates) return start16[unit]! + (cp - cpStart[unit]!);
    if (unit !== this.unit || cp < this.cp) {
      this.unit = unit;
      this.cp = cpStart[unit]!;
      this.offset = start16[unit]!;
    }
    this.offset = advanceCodePoints(this.text, this.offset, cp - this.cp);
    this.cp = cp;
    return this.offset;
  }
}

/**
 * Packs units into chunks, greedily: a chunk takes whole units while the span from its start
 * to the end of the next unit (separators in between included) stays within the chunk size;
 * inside a run it may end at any character.
 *
 * Overlap: the next chunk starts at the earliest unit start (or character of a run) `p` after
 * the current start such that the repeated text, from `p` to the end of the current chunk, has
 * at most `chunkOverlap` characters, and the chunk starting at `p` still has room for the unit
 * (or character) that follows the current chunk. So the overlap is the longest tail of whole
 * units that fits the budget; with overlap 0 chunks never share text.
 *
 * Linear in units plus chunks: the chunk's last unit and its first unit only move forward.
 */
export function packUnits(
  text: string,
  units: UnitList,
  options: ResolvedSplitOptions,
  surrogates: boolean,
): Chunk[] {
  const { chunkSize, chunkOverlap, maxChunks, maxTotalLength } = options;
  const { length: count, start16, end16, cpStart, cpEnd, run } = units;
  const chunks: Chunk[] = [];
  if (count === 0) return chunks;
  const starts = new RunCursor(text, units, surrogates);
  const ends = new RunCursor(text, units, surrogates);
  // First and last unit of the current chunk, and its start and end in characters.
  let first = 0;
  let last = 0;
  let from = cpStart[0]!;
  let totalLength = 0;
  // The first place a chunk may end in unit `u`: its end, or its first character for a run.
  const firstEnd = (u: number): number => (run[u] ? cpStart[u]! + 1 : cpEnd[u]!);

  for (;;) {
    const limit = from + chunkSize;
    if (last < first) last = first;
    while (last + 1 < count && firstEnd(last + 1) <= limit) last++;
    const to = run[last] ? Math.min(cpEnd[last]!, limit) : cpEnd[last]!;

    if (chunks.length >= maxChunks) throw new ChunkLimitError('maxChunks', maxChunks);
    totalLength += to - from;
    if (totalLength > maxTotalLength) throw new ChunkLimitError('maxTotalLength', maxTotalLength);
    const start = from === cpStart[first] ? start16[first]! : starts.offsetOf(first, from);
    const end = to === cpEnd[last] ? end16[last]! : ends.offsetOf(last, to);
    chunks.push({
      index: chunks.length,
      content: text.slice(start, end),
      length: to - from,
      start,
      end,
    });

    const insideRun = to < cpEnd[last]!;
    if (!insideRun && last === count - 1) return chunks;
    // The end of the smallest step forward: the next character of this run, or the next unit.
    const nextEnd = insideRun ? to + 1 : firstEnd(last + 1);
    const earliest = Math.max(from + 1, to - chunkOverlap, nextEnd - chunkSize);
    // The earliest allowed start at or after `earliest`; it is never past the next unit.
    while (cpStart[first]! < earliest && !(run[first] && earliest < cpEnd[first]!)) {
      if (++first > last + 1) throw new Error('packUnits: no chunk start found (a bug)');
    }
    from = Math.max(cpStart[first]!, earliest);
  }
}

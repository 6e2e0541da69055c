import { isWhitespace, type PairIndex } from './code-points.js';
import type { ResolvedSplitOptions } from './options.js';
import { separatorLevels, type BoundaryFinder } from './separators.js';

/**
 * The pieces a text is packed from, in text order, as parallel typed arrays (a 10 MB text can
 * have millions of pieces; one object each would cost an order of magnitude more memory).
 * Unit `u` is `text.slice(start16[u], end16[u])`, holding characters `[cpStart[u], cpEnd[u])`.
 * A unit is never longer than the chunk size, except a *run*: a stretch without any separator,
 * which the packer may cut between any two characters.
 */
export class UnitList {
  length = 0;
  start16 = new Int32Array(64);
  end16 = new Int32Array(64);
  /** Same arrays as `start16`/`end16` when the text has no surrogates (offsets are characters). */
  cpStart: Int32Array;
  cpEnd: Int32Array;
  run = new Uint8Array(64);

  constructor(private readonly surrogates: boolean) {
    this.cpStart = surrogates ? new Int32Array(64) : this.start16;
    this.cpEnd = surrogates ? new Int32Array(64) : this.end16;
  }

  push(start16: number, end16: number, cpStart: number, cpEnd: number, run: boolean): void {
    if (this.length === this.start16.length) this.grow();
    const u = this.length++;
    this.start16[u] = start16;
    this.end16[u] = end16;
    this.cpStart[u] = cpStart;
    this.cpEnd[u] = cpEnd;
    this.run[u] = run ? 1 : 0;
  }

  private grow(): void {
    const size = this.start16.length * 2;
    const widen = <T extends Int32Array | Uint8Array>(from: T, to: T): T => (to.set(from), to);
    this.start16 = widen(this.start16, new Int32Array(size));
    this.end16 = widen(this.end16, new Int32Array(size));
    this.cpStart = this.surrogates ? widen(this.cpStart, new Int32Array(size)) : this.start16;
    this.cpEnd = this.surrogates ? widen(this.cpEnd, new Int32Array(size)) : this.end16;
    this.run = widen(this.run, new Uint8Array(size));
  }
}

/**
 * Cuts `text` into units: the pieces between delimiters, trimmed of whitespace, empty ones
 * dropped. A piece longer than the chunk size is cut again at the next finer separator (line
 * break, sentence end, whitespace), and what is still too long after whitespace becomes a run.
 *
 * Linear: each level scans only the pieces too long for the level above, left to right, and its
 * separator search never goes over the same text twice (see {@link BoundaryFinder}).
 */
export function collectUnits(
  text: string,
  options: ResolvedSplitOptions,
  pairs: PairIndex,
): UnitList {
  const surrogates = pairs.any;
  const units = new UnitList(surrogates);
  const levels = separatorLevels(text, options.delimiter);
  const maxSize = options.chunkSize;
  const cpAt = (at: number): number => (surrogates ? pairs.charsBefore(at) : at);

  const piece = (from: number, to: number, level: number): void => {
    while (from < to && isWhitespace(text.charCodeAt(from))) from++;
    while (to > from && isWhitespace(text.charCodeAt(to - 1))) to--;
    if (from === to) return;
    const fits = to - from <= maxSize || (surrogates && pairs.count(from, to) <= maxSize);
    if (fits || level === levels.length) {
      const cpStart = cpAt(from);
      units.push(from, to, cpStart, cpAt(to), !fits);
    } else {
      split(from, to, level);
    }
  };

  const split = (from: number, to: number, level: number): void => {
    const finder: BoundaryFinder = levels[level]!;
    let at = from;
    while (finder.find(at) && finder.end <= to) {
      piece(at, finder.start, level + 1);
      at = finder.end;
    }
    piece(at, to, level + 1);
  };

  split(0, text.length, 0);
  return units;
}

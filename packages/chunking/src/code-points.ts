/**
 * Character arithmetic for the splitter. A "character" is a Unicode code point, as the spec's
 * `length` is a character count and clients count characters, not UTF-16 units: an emoji is one
 * character and is never cut in half. A lone (unpaired) surrogate counts as one character, the
 * way the string iterator (`[...text]`) counts it.
 */

/** Whether `code` is a UTF-16 high (leading) surrogate. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Whether `code` is a UTF-16 low (trailing) surrogate. */
export function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Whether offset `at` lies between the two halves of a surrogate pair. */
export function splitsPair(text: string, at: number): boolean {
  return (
    at > 0 &&
    at < text.length &&
    isLowSurrogate(text.charCodeAt(at)) &&
    isHighSurrogate(text.charCodeAt(at - 1))
  );
}

const HIGH_SURROGATE = /[\uD800-\uDBFF]/;
const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

/**
 * Where the surrogate pairs of a text are, found in one pass. Turning a UTF-16 offset into a
 * character offset is then a binary search over the pairs, not a walk over the text; and a text
 * without pairs (the common case) needs no conversion at all.
 */
export class PairIndex {
  /** UTF-16 offset of the first half of every pair, ascending. */
  private readonly pairs: Int32Array;

  constructor(text: string) {
    const found: number[] = [];
    // The regex engine beats a charCodeAt loop, and answers at once for a one-byte string.
    const first = text.search(HIGH_SURROGATE);
    if (first !== -1) {
      const pair = new RegExp(SURROGATE_PAIR.source, 'g');
      pair.lastIndex = first;
      for (let match = pair.exec(text); match; match = pair.exec(text)) found.push(match.index);
    }
    this.pairs = Int32Array.from(found);
  }

  /** Whether the text has any pair (if not, UTF-16 offsets are character offsets). */
  get any(): boolean {
    return this.pairs.length > 0;
  }

  /** Characters before UTF-16 offset `at` (an offset that does not split a pair). */
  charsBefore(at: number): number {
    return at - this.pairsBefore(at);
  }

  /** Characters in `text.slice(from, to)`. */
  count(from: number, to: number): number {
    return to - from - (this.pairsBefore(to) - this.pairsBefore(from));
  }

  private pairsBefore(at: number): number {
    const { pairs } = this;
    let low = 0;
    let high = pairs.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (pairs[mid]! < at) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** The UTF-16 offset `count` code points after `from` (bounded by `text.length`). */
export function advanceCodePoints(text: string, from: number, count: number): number {
  let at = from;
  for (let n = 0; n < count && at < text.length; n++) {
    at += isHighSurrogate(text.charCodeAt(at)) && isLowSurrogate(text.charCodeAt(at + 1)) ? 2 : 1;
  }
  return at;
}

/**
 * The characters `String.prototype.trim` and the regex class `\s` treat as whitespace, so that
 * trimming here and `\s` in the separators agree.
 */
export function isWhitespace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

import { splitsPair } from './code-points.js';

/**
 * Finds the boundaries of one separator level in a text. After `find(from)` returns true,
 * `start` is where the piece before the boundary ends and `end` where the next piece begins
 * (equal for a boundary that consumes no text, like the end of a sentence).
 *
 * Queries must come with non-decreasing `from`, which the splitter guarantees because it walks
 * the text left to right. The last answer is cached, so a separator that is far away (or absent)
 * is searched for once, not once per piece: each level scans the text at most once in total.
 */
export interface BoundaryFinder {
  start: number;
  end: number;
  find(from: number): boolean;
}

/** Occurrences of a literal string, skipping any that would cut a surrogate pair in half. */
export class StringFinder implements BoundaryFinder {
  start = -1;
  end = -1;
  private searchedFrom = Infinity;

  constructor(
    private readonly text: string,
    private readonly separator: string,
  ) {}

  find(from: number): boolean {
    if (this.searchedFrom <= from && this.start >= from) return this.start !== Infinity;
    this.searchedFrom = from;
    let at = this.text.indexOf(this.separator, from);
    while (
      at !== -1 &&
      (splitsPair(this.text, at) || splitsPair(this.text, at + this.separator.length))
    ) {
      at = this.text.indexOf(this.separator, at + 1);
    }
    this.start = at === -1 ? Infinity : at;
    this.end = at === -1 ? Infinity : at + this.separator.length;
    return at !== -1;
  }
}

/**
 * Matches of a global regex. `boundaryAtEnd` makes the boundary the (empty) position after the
 * match, so the matched text stays with the piece before it (the full stop of a sentence).
 */
export class RegexFinder implements BoundaryFinder {
  start = -1;
  end = -1;
  private searchedFrom = Infinity;
  private matchStart = -1;

  constructor(
    private readonly text: string,
    private readonly pattern: RegExp,
    private readonly boundaryAtEnd: boolean,
  ) {}

  find(from: number): boolean {
    if (this.searchedFrom <= from && this.matchStart >= from) return this.matchStart !== Infinity;
    this.searchedFrom = from;
    this.pattern.lastIndex = from;
    const match = this.pattern.exec(this.text);
    if (!match) {
      this.matchStart = this.start = this.end = Infinity;
      return false;
    }
    this.matchStart = match.index;
    const matchEnd = match.index + match[0].length;
    this.start = this.boundaryAtEnd ? matchEnd : match.index;
    this.end = matchEnd;
    return true;
  }
}

/**
 * End of a sentence: a run of `.`, `!`, `?` or `…` followed by whitespace, or a run of the
 * CJK full stops `。！？` (CJK text puts no space after them).
 */
const SENTENCE_END = /[.!?\u2026]+(?=\s)|[\u3002\uff01\uff1f]+/g;
const WHITESPACE_RUN = /\s+/g;

/**
 * The separator levels, coarsest first: the caller's delimiter, a line break, a sentence end,
 * whitespace between words. A piece still longer than the chunk size after the last level is
 * cut between characters by the packer.
 */
export function separatorLevels(text: string, delimiter: string): BoundaryFinder[] {
  return [
    new StringFinder(text, delimiter),
    new StringFinder(text, '\n'),
    new RegexFinder(text, new RegExp(SENTENCE_END.source, 'g'), true),
    new RegexFinder(text, new RegExp(WHITESPACE_RUN.source, 'g'), false),
  ];
}

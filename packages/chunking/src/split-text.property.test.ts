import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitText, type Chunk } from './index.js';
import { referenceSplit } from './testing/reference-split.js';

/**
 * Text made of the pieces that stress the rules: words, spaces and line breaks, sentence ends
 * (also CJK), emoji outside the BMP (surrogate pairs), a ZWJ sequence, lone surrogates, and the
 * delimiters under test, so delimiters land at the start, the end and next to each other.
 */
const TOKENS = [
  'a',
  'bb',
  'word',
  'longerword',
  ' ',
  '  ',
  '\t',
  '\n',
  '\n\n',
  '\r\n',
  '.',
  '. ',
  '! ',
  '?',
  '。',
  '😀',
  '👩‍💻',
  '\uD83D',
  '\uDE00',
  ';',
  '---',
  'é',
  '\u00a0',
];
const DELIMITERS = ['\n\n', '\n', ';', '---', ' ', '.', '😀', '\uDE00', 'a'];

const text = fc
  .array(fc.oneof(fc.constantFrom(...TOKENS), fc.string({ unit: 'binary', maxLength: 3 })), {
    maxLength: 80,
    size: 'max',
  })
  .map((parts) => parts.join(''));
const delimiter = fc.oneof(
  fc.constantFrom(...DELIMITERS),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 2 }),
);
/** Sizes from 1 up, the overlap anywhere below the size, 0 and size - 1 included. */
const sizes = fc.integer({ min: 1, max: 40 }).chain((chunkSize) =>
  fc.record({
    chunkSize: fc.constant(chunkSize),
    chunkOverlap: fc.oneof(
      fc.constant(0),
      fc.constant(chunkSize - 1),
      fc.integer({ min: 0, max: chunkSize - 1 }),
    ),
  }),
);
const tinySizes = fc.constantFrom(
  { chunkSize: 1, chunkOverlap: 0 },
  { chunkSize: 2, chunkOverlap: 0 },
  { chunkSize: 2, chunkOverlap: 1 },
);
const anySizes = fc.oneof(sizes, tinySizes);

const chars = (s: string) => Array.from(s).length;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const splitsPair = (t: string, at: number) =>
  /^[\uD800-\uDBFF][\uDC00-\uDFFF]$/.test(t.slice(at - 1, at + 1));

/** Text between chunks that no chunk covers; the rules only ever drop these characters. */
function droppedText(source: string, chunks: Chunk[]): string[] {
  const gaps: string[] = [];
  let covered = 0;
  for (const chunk of chunks) {
    if (chunk.start > covered) gaps.push(source.slice(covered, chunk.start));
    covered = Math.max(covered, chunk.end);
  }
  gaps.push(source.slice(covered));
  return gaps;
}

describe('splitText properties', () => {
  it('never makes a chunk longer than the chunk size, nor an empty one', () => {
    fc.assert(
      fc.property(text, anySizes, delimiter, (source, size, delim) => {
        const chunks = splitText(source, { ...size, delimiter: delim });
        const wrong = chunks.filter(
          (c) => c.length < 1 || c.length > size.chunkSize || c.length !== chars(c.content),
        );
        expect(wrong).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('gives chunks in text order that cover everything but whitespace and delimiters', () => {
    fc.assert(
      fc.property(text, anySizes, delimiter, (source, size, delim) => {
        const chunks = splitText(source, { ...size, delimiter: delim });
        const droppable = new RegExp(`^(?:${escape(delim)}|\\s)*$`);
        const wrong = chunks.filter((chunk, i) => {
          const previous = chunks[i - 1];
          return (
            chunk.index !== i ||
            chunk.content !== source.slice(chunk.start, chunk.end) ||
            chunk.content !== chunk.content.trim() ||
            splitsPair(source, chunk.start) ||
            splitsPair(source, chunk.end) ||
            (previous && !(chunk.start > previous.start && chunk.end > previous.end))
          );
        });
        expect(wrong).toEqual([]);
        expect(droppedText(source, chunks).filter((gap) => !droppable.test(gap))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('repeats at most chunk_overlap characters, as a tail of one chunk and head of the next', () => {
    fc.assert(
      fc.property(text, anySizes, delimiter, (source, size, delim) => {
        const chunks = splitText(source, { ...size, delimiter: delim });
        const wrong = chunks.slice(1).filter((chunk, i) => {
          const previous = chunks[i]!;
          const shared = source.slice(chunk.start, Math.max(chunk.start, previous.end));
          return (
            chars(shared) > size.chunkOverlap ||
            !previous.content.endsWith(shared) ||
            !chunk.content.startsWith(shared) ||
            (size.chunkOverlap === 0 && chunk.start < previous.end)
          );
        });
        expect(wrong).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('slides over unbroken text by exactly chunk_size - chunk_overlap characters', () => {
    const unbroken = fc
      .array(fc.constantFrom('a', 'é', '😀', '中', '\uDE00'), { minLength: 1, maxLength: 80 })
      .map((parts) => parts.join(''));
    fc.assert(
      fc.property(unbroken, anySizes, (source, size) => {
        const cps = Array.from(source);
        const step = size.chunkSize - size.chunkOverlap;
        const expected: string[] = [];
        for (let from = 0; ; from += step) {
          expected.push(cps.slice(from, from + size.chunkSize).join(''));
          if (from + size.chunkSize >= cps.length) break;
        }
        expect(splitText(source, { ...size, delimiter: '\n\n' }).map((c) => c.content)).toEqual(
          expected,
        );
      }),
      { numRuns: 300 },
    );
  });

  it('packs and overlaps exactly as the naive model of the rules', () => {
    fc.assert(
      fc.property(text, anySizes, delimiter, (source, size, delim) => {
        expect(splitText(source, { ...size, delimiter: delim })).toEqual(
          referenceSplit(source, size.chunkSize, size.chunkOverlap, delim),
        );
      }),
      { numRuns: 1000 },
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  ChunkLimitError,
  InvalidSplitOptionsError,
  splitText,
  type SplitOptions,
} from './index.js';

const contents = (text: string, options?: SplitOptions) =>
  splitText(text, options).map((chunk) => chunk.content);

describe('splitText', () => {
  it('uses the spec defaults: 1000 characters, 200 overlap, two newlines', () => {
    const paragraph = (n: number) => `${String(n).padStart(3, '0')} ${'x'.repeat(295)}.`;
    const text = Array.from({ length: 10 }, (_, n) => paragraph(n)).join('\n\n');
    const chunks = splitText(text);
    // 300-character paragraphs, 2 separators each: three fit in 1000 (904), four do not.
    expect(chunks.map((c) => c.content.slice(0, 3))).toEqual(['000', '003', '006', '009']);
    expect(chunks.map((c) => c.length)).toEqual([904, 904, 904, 300]);
    expect(chunks[1]!.content).toBe([3, 4, 5].map(paragraph).join('\n\n'));
  });

  it('keeps a text that fits in one chunk whole, delimiters included', () => {
    const text = 'First paragraph.\n\nSecond paragraph.';
    expect(splitText(text)).toEqual([{ index: 0, content: text, length: 35, start: 0, end: 35 }]);
  });

  it('splits on the delimiter and packs pieces up to the chunk size', () => {
    expect(contents('a;b;c', { chunkSize: 2, chunkOverlap: 0, delimiter: ';' })).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(contents('a;b;c;d', { chunkSize: 3, chunkOverlap: 0, delimiter: ';' })).toEqual([
      'a;b',
      'c;d',
    ]);
  });

  it('gives no chunks for empty or blank content', () => {
    expect(splitText('')).toEqual([]);
    expect(splitText('  \n\n \t\n  ')).toEqual([]);
    expect(splitText(';;;', { delimiter: ';' })).toEqual([]);
  });

  it('trims whitespace around pieces and keeps it inside them', () => {
    const chunks = splitText('  alpha  beta \n\n\n\n  gamma  ', { chunkSize: 12, chunkOverlap: 0 });
    expect(chunks.map((c) => c.content)).toEqual(['alpha  beta', 'gamma']);
    expect(chunks.map((c) => [c.start, c.end])).toEqual([
      [2, 13],
      [20, 25],
    ]);
  });

  it('cuts an oversized piece at lines, then sentences, then words, then characters', () => {
    const options = { chunkSize: 12, chunkOverlap: 0 };
    expect(contents('line one\nline two\nline three', options)).toEqual([
      'line one',
      'line two',
      'line three',
    ]);
    expect(contents('Hi there. How are you? Fine!', options)).toEqual([
      'Hi there.',
      'How are you?',
      'Fine!',
    ]);
    expect(contents('one two three four five', options)).toEqual(['one two', 'three four', 'five']);
    expect(contents('abcdefghijklmnopqrstuvwxyz', options)).toEqual([
      'abcdefghijkl',
      'mnopqrstuvwx',
      'yz',
    ]);
  });

  it('ends sentences at CJK full stops without a following space', () => {
    expect(
      contents('你好世界。今天天气很好！我们走吧？', { chunkSize: 7, chunkOverlap: 0 }),
    ).toEqual(['你好世界。', '今天天气很好！', '我们走吧？']);
  });

  it('repeats the longest tail of whole pieces that fits the overlap', () => {
    expect(contents('one two three four five six', { chunkSize: 10, chunkOverlap: 4 })).toEqual([
      'one two',
      'two three',
      // "three" has 5 characters, more than the overlap allows: no overlap here.
      'four five',
      'five six',
    ]);
  });

  it('slides by chunk size minus overlap inside a text with no separator', () => {
    expect(contents('abcdefghij', { chunkSize: 4, chunkOverlap: 2 })).toEqual([
      'abcd',
      'cdef',
      'efgh',
      'ghij',
    ]);
  });

  it('counts characters, not UTF-16 units, and never cuts a surrogate pair', () => {
    const chunks = splitText('😀😀😀😀😀', { chunkSize: 2, chunkOverlap: 1 });
    expect(chunks.map((c) => [c.content, c.length])).toEqual([
      ['😀😀', 2],
      ['😀😀', 2],
      ['😀😀', 2],
      ['😀😀', 2],
    ]);
    expect(splitText('ab😀cd', { chunkSize: 1, chunkOverlap: 0 }).map((c) => c.content)).toEqual([
      'a',
      'b',
      '😀',
      'c',
      'd',
    ]);
  });

  it('ignores a delimiter occurrence that would cut a surrogate pair', () => {
    // "\uDE00" is the second half of 😀 (U+1F600).
    expect(
      contents('x\uDE00y😀z', { chunkSize: 10, chunkOverlap: 0, delimiter: '\uDE00' }),
    ).toEqual(['x\uDE00y😀z']);
    expect(contents('x\uDE00y😀z', { chunkSize: 3, chunkOverlap: 0, delimiter: '\uDE00' })).toEqual(
      ['x', 'y😀z'],
    );
  });

  it('handles CRLF line endings and a multi-character delimiter', () => {
    expect(contents('a\r\nb\r\nc', { chunkSize: 1, chunkOverlap: 0 })).toEqual(['a', 'b', 'c']);
    expect(
      contents('one---two---three', { chunkSize: 9, chunkOverlap: 0, delimiter: '---' }),
    ).toEqual(['one---two', 'three']);
  });

  it('rejects options no split can honour', () => {
    const bad: SplitOptions[] = [
      { chunkSize: 0 },
      { chunkSize: -5 },
      { chunkSize: 1.5 },
      { chunkSize: 10, chunkOverlap: -1 },
      { chunkSize: 10, chunkOverlap: 10 },
      { chunkSize: 10, chunkOverlap: 11 },
      { chunkSize: 150 }, // the default overlap (200) is not smaller
      { delimiter: '' },
    ];
    for (const options of bad) {
      expect(() => splitText('text', options), JSON.stringify(options)).toThrow(
        InvalidSplitOptionsError,
      );
    }
  });

  it('stops with ChunkLimitError past maxChunks or maxTotalLength', () => {
    const text = 'a'.repeat(100);
    expect(splitText(text, { chunkSize: 10, chunkOverlap: 0, maxChunks: 10 })).toHaveLength(10);
    const tooMany = catchError(() =>
      splitText(text, { chunkSize: 10, chunkOverlap: 0, maxChunks: 9 }),
    );
    expect(tooMany).toBeInstanceOf(ChunkLimitError);
    expect(tooMany).toMatchObject({ code: 'chunk_limit_exceeded', limit: 'maxChunks', max: 9 });
    // Overlap 9 of 10: 91 chunks of 10 characters, 910 characters for a 100-character text.
    expect(splitText(text, { chunkSize: 10, chunkOverlap: 9, maxTotalLength: 910 })).toHaveLength(
      91,
    );
    expect(
      catchError(() => splitText(text, { chunkSize: 10, chunkOverlap: 9, maxTotalLength: 909 })),
    ).toMatchObject({ limit: 'maxTotalLength', max: 909 });
  });

  it('splits megabytes of unbroken or one-character-word text', () => {
    const unbroken = 'x'.repeat(1_000_000);
    const windows = splitText(unbroken, { chunkSize: 1000, chunkOverlap: 200 });
    expect(windows).toHaveLength(Math.ceil((1_000_000 - 200) / 800));
    expect(windows.every((c, i) => c.length <= 1000 && c.start === i * 800)).toBe(true);
    expect(windows.at(-1)).toMatchObject({ end: 1_000_000 });
    const words = 'a '.repeat(300_000);
    const tiny = splitText(words, { chunkSize: 1, chunkOverlap: 0 });
    expect(tiny).toHaveLength(300_000);
    expect(tiny[299_999]).toMatchObject({ content: 'a', start: 599_998, end: 599_999 });
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

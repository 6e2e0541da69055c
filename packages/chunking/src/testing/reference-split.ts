/**
 * A deliberately naive model of the split rules in `split-text.ts`, written straight from their
 * definition: every piece as a string range, runs expanded into one unit per character, chunk
 * and overlap lengths recounted from scratch each time. Quadratic, so only for small property-test
 * inputs; the fast splitter must produce exactly what this produces.
 */
export interface ReferenceChunk {
  index: number;
  content: string;
  length: number;
  start: number;
  end: number;
}

const chars = (s: string): number => Array.from(s).length;

const splitsPair = (text: string, at: number): boolean =>
  /[\uD800-\uDBFF]/.test(text[at - 1] ?? '') && /[\uDC00-\uDFFF]/.test(text[at] ?? '');

/** Boundaries `[start, end)` of a level inside `text.slice(from, to)`, left to right. */
function boundaries(
  text: string,
  from: number,
  to: number,
  level: number,
  delimiter: string,
): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  if (level <= 1) {
    const separator = level === 0 ? delimiter : '\n';
    let i = from;
    while (i + separator.length <= to) {
      const end = i + separator.length;
      if (text.startsWith(separator, i) && !splitsPair(text, i) && !splitsPair(text, end)) {
        found.push([i, end]);
        i = end;
      } else i++;
    }
    return found;
  }
  // Sentence ends may look one character past the piece (the whitespace after a full stop).
  const pattern = level === 2 ? /[.!?\u2026]+(?=\s)|[\u3002\uff01\uff1f]+/g : /\s+/g;
  for (const match of text.slice(from, to + 1).matchAll(pattern)) {
    const start = from + match.index;
    const end = start + match[0].length;
    if (end > to) break;
    found.push(level === 2 ? [end, end] : [start, end]);
  }
  return found;
}

/** The units of the text as `[start, end)` ranges, runs cut into single characters. */
function units(text: string, size: number, delimiter: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const piece = (from: number, to: number, level: number): void => {
    const raw = text.slice(from, to);
    const start = from + (raw.length - raw.trimStart().length);
    const end = to - (raw.length - raw.trimEnd().length);
    if (start >= end) return;
    if (chars(text.slice(start, end)) <= size) out.push([start, end]);
    else if (level < 4) split(start, end, level);
    else {
      let at = start;
      for (const ch of text.slice(start, end)) out.push([at, (at += ch.length)]);
    }
  };
  const split = (from: number, to: number, level: number): void => {
    let at = from;
    for (const [start, end] of boundaries(text, from, to, level, delimiter)) {
      piece(at, start, level + 1);
      at = end;
    }
    piece(at, to, level + 1);
  };
  split(0, text.length, 0);
  return out;
}

/** Chunks by the packing rule: fill greedily; start the next at the longest fitting overlap. */
export function referenceSplit(
  text: string,
  size: number,
  overlap: number,
  delimiter: string,
): ReferenceChunk[] {
  const list = units(text, size, delimiter);
  const span = (a: number, b: number): number => chars(text.slice(list[a]![0], list[b]![1]));
  const chunks: ReferenceChunk[] = [];
  let first = 0;
  while (first < list.length) {
    let last = first;
    while (last + 1 < list.length && span(first, last + 1) <= size) last++;
    const start = list[first]![0];
    const end = list[last]![1];
    const content = text.slice(start, end);
    chunks.push({ index: chunks.length, content, length: chars(content), start, end });
    if (last === list.length - 1) break;
    let next = first + 1;
    while (next <= last && !(span(next, last) <= overlap && span(next, last + 1) <= size)) next++;
    first = next;
  }
  return chunks;
}

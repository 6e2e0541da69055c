/**
 * Chunking throughput: our `splitText` against LangChain's `RecursiveCharacterTextSplitter` on the
 * same generated text, in the same run, so the ratio holds on whatever machine runs it; and the
 * time per MB across 1, 2, 5 and 10 MB as evidence that the split is linear.
 *
 *   node --import tsx bench/chunking.ts
 *
 * Env: RUNS (default 9; the median is reported, the two splitters alternate each run),
 * SIZES (default "1,2,5,10", MB of UTF-8), SEED (default 42).
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import { splitText } from '../packages/chunking/src/index.js';

const runs = Number(process.env.RUNS ?? 9);
const sizes = (process.env.SIZES ?? '1,2,5,10').split(',').map(Number);
const seed = Number(process.env.SEED ?? 42);
const MB = 1_000_000;

const CHUNK_SIZE = 1000;
const CHUNK_OVERLAP = 200;

/** mulberry32: a small deterministic PRNG, so every run splits the same text. */
function prng(state: number): () => number {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which ' +
  'but have an they you were her she there been one all we their has would when if so no will ' +
  'system data model service request response chunk document retrieval embedding vector index ' +
  'query latency throughput replica cluster gateway session token network protocol schedule ' +
  'configuration deployment observability reliability café naïve résumé straße internationalization'
).split(' ');

/**
 * Prose of about `bytes` UTF-8 bytes: sentences of 6-28 words, paragraphs of 2-9 sentences
 * separated by a blank line, one paragraph in twelve long enough (3,000+ characters, some with
 * line breaks) to be cut by sentences, so every separator level is exercised.
 */
function prose(bytes: number, random: () => number, emoji: boolean): string {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const sentence = () => {
    const words = Array.from({ length: 6 + Math.floor(random() * 23) }, () => pick(WORDS));
    if (emoji && random() < 0.2) words.push(pick(['🙂', '🚀', '👍🏽', '✅']));
    const text = words.join(' ');
    return text[0]!.toUpperCase() + text.slice(1) + pick(['.', '.', '.', '?', '!']);
  };
  const paragraphs: string[] = [];
  let size = 0;
  while (size < bytes) {
    const long = random() < 1 / 12;
    const count = long ? 25 + Math.floor(random() * 20) : 2 + Math.floor(random() * 8);
    const sentences = Array.from({ length: count }, sentence);
    const paragraph = sentences.join(long && random() < 0.5 ? '\n' : ' ');
    paragraphs.push(paragraph);
    size += Buffer.byteLength(paragraph) + 2;
  }
  return paragraphs.join('\n\n');
}

const langchain = new RecursiveCharacterTextSplitter({
  chunkSize: CHUNK_SIZE,
  chunkOverlap: CHUNK_OVERLAP,
  // The same levels as ours: delimiter, line, sentence, word, character.
  separators: ['\n\n', '\n', '. ', ' ', ''],
});

interface Measured {
  ms: number;
  chunks: number;
  maxLength: number;
}

async function time(split: () => Promise<Array<{ length: number }>>): Promise<Measured> {
  const started = performance.now();
  const chunks = await split();
  const ms = performance.now() - started;
  return {
    ms,
    chunks: chunks.length,
    maxLength: chunks.reduce((max, c) => Math.max(max, c.length), 0),
  };
}

const ours =
  (text: string, options = {}) =>
  async () =>
    splitText(text, { chunkSize: CHUNK_SIZE, chunkOverlap: CHUNK_OVERLAP, ...options });
const theirs = (text: string) => async () =>
  (await langchain.splitText(text)).map((content) => ({ length: content.length }));

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const summary = (list: Measured[]): Measured => ({
  ...list[0]!,
  ms: median(list.map((m) => m.ms)),
});

async function compare(text: string): Promise<{ ours: Measured; theirs: Measured }> {
  const a: Measured[] = [];
  const b: Measured[] = [];
  for (let run = 0; run < runs; run++) {
    // Alternate the order so drift on a shared machine hits both alike.
    if (run % 2 === 0) {
      a.push(await time(ours(text)));
      b.push(await time(theirs(text)));
    } else {
      b.push(await time(theirs(text)));
      a.push(await time(ours(text)));
    }
  }
  return { ours: summary(a), theirs: summary(b) };
}

/** Least-squares slope of log(time) against log(size): 1 means linear, 2 quadratic. */
function growthExponent(points: Array<[number, number]>): number {
  const xs = points.map(([x]) => Math.log(x));
  const ys = points.map(([, y]) => Math.log(y));
  const mx = xs.reduce((s, x) => s + x, 0) / xs.length;
  const my = ys.reduce((s, y) => s + y, 0) / ys.length;
  const num = xs.reduce((s, x, i) => s + (x - mx) * (ys[i]! - my), 0);
  const den = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return num / den;
}

const HEADER = [
  '| text | MB | ours ms | ours MB/s | ours ms per MB | LangChain ms | LangChain MB/s |',
  ' speed-up | chunks ours / LC | longest ours / LC |',
].join('');

async function main(): Promise<void> {
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), ` +
      `@langchain/textsplitters 1.0.2; chunk size ${CHUNK_SIZE}, overlap ${CHUNK_OVERLAP}; ` +
      `${runs} runs per cell, median; seed ${seed}\n`,
  );
  // Warm both splitters up on both string representations (one-byte and two-byte).
  await compare(prose(MB, prng(seed), false));
  await compare(prose(MB, prng(seed), true));

  const rows: string[] = [];
  const growth: Array<[number, number]> = [];
  const theirGrowth: Array<[number, number]> = [];
  for (const emoji of [false, true]) {
    for (const size of emoji ? [sizes[0]!, sizes[sizes.length - 1]!] : sizes) {
      const text = prose(size * MB, prng(seed + size), emoji);
      const mb = Buffer.byteLength(text) / MB;
      const { ours: o, theirs: t } = await compare(text);
      if (!emoji) {
        growth.push([mb, o.ms]);
        theirGrowth.push([mb, t.ms]);
      }
      const rate = (m: Measured) => (mb / (m.ms / 1000)).toFixed(0);
      const cells = [
        emoji ? 'prose + emoji' : 'prose',
        mb.toFixed(2),
        o.ms.toFixed(0),
        rate(o),
        (o.ms / mb).toFixed(1),
        t.ms.toFixed(0),
        rate(t),
        `${(t.ms / o.ms).toFixed(1)}×`,
        `${o.chunks} / ${t.chunks}`,
        `${o.maxLength} / ${t.maxLength}`,
      ];
      rows.push(`| ${cells.join(' | ')} |`);
    }
  }
  console.log(HEADER);
  console.log(`| --- |${' ---: |'.repeat(9)}`);
  for (const row of rows) console.log(row);
  console.log(
    `\ngrowth exponent (log-log slope of time against size, 1 = linear): ours ` +
      `${growthExponent(growth).toFixed(2)}, LangChain ${growthExponent(theirGrowth).toFixed(2)}`,
  );

  // Inputs built to expose quadratic behaviour: a separator that never occurs (every level
  // searches far ahead), text with no separator at all (cut between characters), and tiny chunks.
  console.log('\n| adversarial input (ours only) | 1 MB ms | 10 MB ms | 10 MB ÷ 1 MB |');
  console.log('| --- | ---: | ---: | ---: |');
  const adversarial: Array<[string, (n: number) => string, object]> = [
    ['one paragraph, no line break', (n) => prose(n, prng(seed), false).replaceAll('\n', ' '), {}],
    ['no separator at all', (n) => 'x'.repeat(n), {}],
    [
      'one-letter words, chunk size 1',
      (n) => 'a '.repeat(n / 2),
      { chunkSize: 1, chunkOverlap: 0 },
    ],
  ];
  for (const [name, make, options] of adversarial) {
    const at = async (n: number) => {
      const text = make(n);
      const measured: Measured[] = [];
      for (let run = 0; run < runs; run++) measured.push(await time(ours(text, options)));
      return summary(measured).ms;
    };
    const small = await at(MB);
    const large = await at(10 * MB);
    const cells = [name, small.toFixed(0), large.toFixed(0), (large / small).toFixed(1)];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

await main();

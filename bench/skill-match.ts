/**
 * Skill matching for a 1,000-skill catalog: `selectSkills` (BM25 over names and descriptions,
 * stemmed, with per-skill term counts cached) against the naive alternative, a substring scan
 * (for each skill, how many of the message's words its lower-cased name and description
 * contain; the best 3 with at least 2), on the same catalog and messages in the same run. Also
 * the first selection after the catalog changed (nothing cached: every description tokenized
 * and stemmed), and a 10,000-skill catalog to show growth.
 *
 *   node --import tsx bench/skill-match.ts
 *
 * Env: SKILLS (default "1000,10000"), MESSAGES (default 300), ROUNDS (default 5), SEED (default 11).
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { selectSkills, type SkillSummary } from '../packages/skills/src/index.js';

const sizes = (process.env.SKILLS ?? '1000,10000').split(',').map(Number);
const messageCount = Number(process.env.MESSAGES ?? 300);
const rounds = Number(process.env.ROUNDS ?? 5);
const seed = Number(process.env.SEED ?? 11);
let state = seed;

/** mulberry32: deterministic, so every run matches the same text. */
function random(): number {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/**
 * Real English task words (so the stemmer does real work) plus 1,500 made-up ones, drawn with
 * a skew: a few words are in many descriptions, most in few, as in a real catalog.
 */
const ENGLISH = (
  'draft email write report summarize document review code plan schedule meeting budget ' +
  'invoice travel booking customer support ticket security audit deploy release test analyze ' +
  'chart spreadsheet translate contract legal recipe fitness workout music playlist photo ' +
  'video social marketing campaign sales forecast finance taxes health research paper ' +
  'presentation slides interview hiring onboarding checklist roadmap backlog incident outage ' +
  'database migration query dashboard metrics survey feedback newsletter blog article ' +
  'proposal negotiation pricing inventory shipping refund complaint apology reminder ' +
  'calendar agenda minutes transcript notes lesson quiz homework essay grammar'
).split(' ');
const SYL = 'ka lo mi ne ru sa ti vo xe zu'.split(' ');
const MADE_UP = Array.from(
  { length: 1500 },
  (_, i) => SYL[i % 10]! + SYL[Math.floor(i / 10) % 10]! + SYL[Math.floor(i / 100) % 10]! + 'n',
);
const VOCAB = [...ENGLISH, ...MADE_UP];
const word = () => VOCAB[Math.floor(VOCAB.length * random() ** 2)]!;
const words = (min: number, max: number) =>
  Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, word);

function catalogOf(size: number, salt = ''): SkillSummary[] {
  return Array.from({ length: size }, (_, i) => ({
    name: `${words(1, 2).join('-')}-${i}`,
    description:
      `${words(15, 45).join(' ')}. Use when the user asks to ${words(2, 6).join(' ')}.` + salt,
    source: 'operator' as const,
  }));
}

/** The naive matcher: substring counts per skill, best 3 with at least 2 words. */
function naiveSelect(catalog: readonly SkillSummary[], message: string): string[] {
  const query = [...new Set(message.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])];
  const scored: Array<{ name: string; hits: number }> = [];
  for (const skill of catalog) {
    const text = `${skill.name} ${skill.description}`.toLowerCase();
    let hits = 0;
    for (const q of query) if (text.includes(q)) hits++;
    if (hits >= 2) scored.push({ name: skill.name, hits });
  }
  scored.sort((a, b) => b.hits - a.hits || (a.name < b.name ? -1 : 1));
  return scored.slice(0, 3).map((s) => s.name);
}

const ours = (catalog: readonly SkillSummary[], message: string) =>
  selectSkills({ catalog, skillNames: [], autoMatch: true, maxSkills: 3, message }).activated;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function timeEach(messages: readonly string[], run: (message: string) => unknown): number[] {
  return messages.map((message) => {
    const started = performance.now();
    run(message);
    return performance.now() - started;
  });
}

async function main(): Promise<void> {
  console.log(
    `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}); ` +
      `${messageCount} messages of 8-30 words, ${rounds} rounds alternating the matchers, ` +
      `samples pooled; seed ${seed}\n`,
  );
  console.log(
    '| skills | naive p50 ms | naive p99 ms | BM25 p50 ms | BM25 p99 ms | BM25 ÷ naive (p50) ' +
      '| first match after a catalog change, ms | matched per message (naive / BM25) |',
  );
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const size of sizes) {
    const catalog = catalogOf(size);
    const messages = Array.from({ length: messageCount }, () => words(8, 30).join(' '));
    // Warm up both (and fill the term cache: the state of a running service).
    for (const m of messages.slice(0, 20)) {
      ours(catalog, m);
      naiveSelect(catalog, m);
    }
    const naive: number[] = [];
    const bm25: number[] = [];
    for (let round = 0; round < rounds; round++) {
      if (round % 2 === 0) {
        naive.push(...timeEach(messages, (m) => naiveSelect(catalog, m)));
        bm25.push(...timeEach(messages, (m) => ours(catalog, m)));
      } else {
        bm25.push(...timeEach(messages, (m) => ours(catalog, m)));
        naive.push(...timeEach(messages, (m) => naiveSelect(catalog, m)));
      }
    }
    // A changed catalog: new descriptions, so nothing is cached yet.
    const cold: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const changed = catalogOf(size, ` v${round}`);
      const started = performance.now();
      ours(changed, messages[round]!);
      cold.push(performance.now() - started);
    }
    const matched = (select: (m: string) => unknown[]) =>
      (messages.reduce((sum, m) => sum + select(m).length, 0) / messages.length).toFixed(2);
    const cells = [
      size.toLocaleString('en'),
      percentile(naive, 50).toFixed(3),
      percentile(naive, 99).toFixed(3),
      percentile(bm25, 50).toFixed(3),
      percentile(bm25, 99).toFixed(3),
      `${(percentile(bm25, 50) / percentile(naive, 50)).toFixed(2)}×`,
      percentile(cold, 50).toFixed(1),
      `${matched((m) => naiveSelect(catalog, m))} / ${matched((m) => ours(catalog, m))}`,
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

await main();

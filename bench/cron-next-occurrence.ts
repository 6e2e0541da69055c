/**
 * Next-occurrence computation for the cron patterns the scheduler generates (daily, weekdays,
 * weekly, monthly, one wall-clock instant) in four zones: the service's `nextCronOccurrence`
 * (packages/jobs, croner since the move to current majors) against cron-parser 5 (BullMQ's default repeat
 * strategy) and croner called directly (to show what the service's wrapper adds), in the same
 * run, so the ratios hold on whatever machine runs it. CPU only: no Redis, no database.
 *
 *   node --import tsx bench/cron-next-occurrence.ts
 *
 * Env: CALLS (next-occurrence calls per implementation per round, default 4000), ROUNDS
 * (default 7; the implementations alternate each round and the median round is reported),
 * WARMUP (calls per implementation before the first round, default 2000).
 *
 * Each call starts from a different instant (spread over 2026-2027, DST changes included), as
 * `syncTask` and BullMQ's repeat strategy do. cron-parser binds its start instant at parse time,
 * so each of its calls parses; croner takes the start instant per call, so its `Cron` objects
 * are cached by pattern and zone. The run that chose croner over the service's own direct
 * computation (`simple-cron.ts`, removed) is this script at commit e73c20e.
 */
import { performance } from 'node:perf_hooks';
import { CronExpressionParser } from 'cron-parser';
import { Cron } from 'croner';
import { nextCronOccurrence } from '../packages/jobs/src/index.js';
import { machineLine } from './support/processes.js';

const calls = Number(process.env.CALLS ?? 4000);
const rounds = Number(process.env.ROUNDS ?? 7);
const warmup = Number(process.env.WARMUP ?? 2000);

const PATTERNS = [
  '0 0 9 * * *', // daily
  '0 30 8 * * 1-5', // weekdays
  '0 0 18 * * 5', // weekly
  '0 15 7 1 * *', // monthly
  '0 30 2 * * *', // daily inside New York's and Paris's spring-forward gap
  '0 45 16 24 12 *', // one wall-clock instant (a yearly match)
];
const ZONES = ['UTC', 'America/New_York', 'Europe/Paris', 'Asia/Tokyo'];
const FROM = Date.parse('2026-01-01T00:00:00Z');
const SPAN = 2 * 365 * 86_400_000;

interface Case {
  pattern: string;
  tz: string;
  after: number;
}

/** Deterministic cases: every pattern in every zone, start instants spread over two years. */
function cases(count: number): Case[] {
  const list: Case[] = [];
  for (let i = 0; i < count; i++) {
    const pattern = PATTERNS[i % PATTERNS.length]!;
    const tz = ZONES[Math.floor(i / PATTERNS.length) % ZONES.length]!;
    // A golden-ratio stride visits the span evenly without repeating an instant.
    const after = FROM + Math.floor(((i * 0.6180339887) % 1) * SPAN);
    list.push({ pattern, tz, after });
  }
  return list;
}

const croners = new Map<string, Cron>();

const implementations: Record<string, (c: Case) => number | null> = {
  'service: nextCronOccurrence (croner)': (c) =>
    nextCronOccurrence({ pattern: c.pattern, tz: c.tz }, c.after),
  'cron-parser 5: parse + next()': (c) =>
    CronExpressionParser.parse(c.pattern, { currentDate: new Date(c.after), tz: c.tz })
      .next()
      .getTime(),
  'croner 11 directly: nextRun() (cached Cron)': (c) => {
    const key = `${c.tz} ${c.pattern}`;
    let cron = croners.get(key);
    if (!cron) {
      cron = new Cron(c.pattern, { timezone: c.tz, paused: true });
      croners.set(key, cron);
    }
    return cron.nextRun(new Date(c.after))?.getTime() ?? null;
  },
};

function run(fn: (c: Case) => number | null, list: Case[]): number {
  let sink = 0;
  const started = performance.now();
  for (const c of list) sink += fn(c) ?? 0;
  const elapsed = performance.now() - started;
  if (sink === 42) console.log('');
  return elapsed;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

const list = cases(calls);
// Where the others disagree with the service on these cases (cron-parser has other DST rules).
const disagreements: Record<string, number> = {};
for (const [name, fn] of Object.entries(implementations)) {
  disagreements[name] = list.filter(
    (c) => fn(c) !== implementations['service: nextCronOccurrence (croner)']!(c),
  ).length;
}
for (const fn of Object.values(implementations)) run(fn, cases(warmup));

const times: Record<string, number[]> = Object.fromEntries(
  Object.keys(implementations).map((name) => [name, []]),
);
for (let round = 0; round < rounds; round++) {
  const order = Object.entries(implementations);
  if (round % 2 === 1) order.reverse();
  for (const [name, fn] of order) times[name]!.push(run(fn, list));
}

console.log(machineLine());
console.log(
  `${calls} calls per round, ${rounds} rounds (median reported), ${PATTERNS.length} patterns × ${ZONES.length} zones\n`,
);
console.log('| implementation | median ms | µs/call | ratio | differs from the service |');
console.log('| --- | ---: | ---: | --- | ---: |');
const baseline = median(times['service: nextCronOccurrence (croner)']!);
for (const name of Object.keys(implementations)) {
  const ms = median(times[name]!);
  const ratio = name.startsWith('service') ? 'baseline' : `${(ms / baseline).toFixed(1)}× time`;
  console.log(
    `| ${name} | ${ms.toFixed(1)} | ${((ms * 1000) / calls).toFixed(2)} | ${ratio} | ${disagreements[name]} of ${calls} |`,
  );
}

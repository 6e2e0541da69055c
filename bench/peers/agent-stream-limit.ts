/**
 * The concurrent-stream limit of `agent-stream.ts`: how many paced answers one server process
 * streams at once before its p99 per-chunk delay passes a bound (50 ms by default).
 *
 * A level of N: N answers from the scripted model, their requests started evenly over `rampMs`.
 * Each answer's first chunk is sent at once; the model then holds every answer until all N
 * first chunks reached the client (so the runs' setup is over and N streams are open), and then
 * sends the other `chunks` − 1 chunks of each answer `paceMs` apart, the answers' schedules
 * offset evenly over one `paceMs` (a steady N / `paceMs` chunks per second, not N at once).
 * The model sends chunk i on this process's clock: it waits on a gate (`waitFor`) that a timer
 * opens on schedule, and the send time is taken as the gate opens (the model writes the chunk in
 * the same run of microtasks). The timers keep to the schedule even when they fire late, so the
 * offered load does not drop when this process is busy. The per-chunk delay is the chunk's
 * arrival at the client minus its send time: whatever the server (and the machine) added,
 * queueing included. Counted are the chunks of the middle of the answers, all N streams
 * mid-answer: not the first chunk (the run's setup), nor the first and last `edge` share of
 * each answer. The answers start and end together (within one `paceMs`), so their ends are a
 * burst of N run completions that streams starting and ending at random would spread out; the
 * p99 with the edges is printed too.
 *
 * The servers are ramped together, level by level, each level `trials` times, the servers
 * taking turns, so the machine's other load falls on all of them alike. A level passes when the
 * median trial's p99 is within the bound and no answer failed or arrived with a wrong chunk
 * count. A server leaves the ramp at its first failed level, then the gap between its last
 * passed and first failed level is halved `refine` times.
 */
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { ScriptStep, StreamPiece } from '../../packages/testing/src/index.js';
import { fmt, percentile } from '../support/open-loop.js';
import { sleep } from '../support/processes.js';

export interface LimitOptions {
  /** Stream counts to try, ascending. */
  levels: number[];
  /** Chunks per answer. */
  chunks: number;
  /** Time between two chunks of an answer, ms. */
  paceMs: number;
  /** The answers of a level start evenly over this long, ms. */
  rampMs: number;
  /** The p99 per-chunk delay a level must stay within, ms. */
  boundMs: number;
  /** The share of each answer's chunks left out at its start and at its end. */
  edge: number;
  /** Halvings of the gap between the last passed and the first failed level. */
  refine: number;
  /** Runs of each level per variant; the median decides. */
  trials: number;
}

/**
 * One way to stream an answer: the scripted model's `model` name through a server (or the
 * model directly); `onChunk(at)` at each text chunk's arrival; resolves with the chunk count.
 */
export type OpenStream = (
  model: string,
  onChunk: (at: number) => void,
  signal: AbortSignal,
) => Promise<number>;

export interface LevelResult {
  count: number;
  p50: number;
  p99: number;
  /** The p99 over every chunk but the first of each answer, edges included. */
  p99All: number;
  max: number;
  /** Chunks counted. */
  samples: number;
  /** From the first counted send to the last counted arrival, ms. */
  windowMs: number;
  /** Failed answers, by message. */
  errors: Map<string, number>;
  /** The server process's CPU per chunk over the level (setup included), µs. */
  cpuPerChunkUs: number;
  /** This process's CPU (model and clients) over the level's wall time: 1 is a whole core. */
  benchBusy: number;
}

interface Gate {
  promise: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** A paced answer whose send times this process sets and records. */
function pacedAnswer(chunks: number, paceMs: number) {
  const sentAt = new Float64Array(chunks).fill(NaN);
  const gates = Array.from({ length: chunks - 1 }, gate);
  const pieces: StreamPiece[] = [{ text: 'xxxx' }];
  for (const g of gates) pieces.push({ waitFor: g.promise }, { text: 'xxxx' });
  pieces.push({ finish: 'stop' });
  const step: ScriptStep = { kind: 'stream', pieces };
  let timer: NodeJS.Timeout | undefined;
  let next = 1;
  return {
    step,
    sentAt,
    /** Sends chunk i (≥ 1) at `origin` + (i − 1) × `paceMs`. */
    start(origin: number) {
      const fire = () => {
        sentAt[next] = performance.now();
        gates[next - 1]!.open();
        if (++next < chunks)
          timer = setTimeout(fire, Math.max(0, origin + (next - 1) * paceMs - performance.now()));
      };
      if (chunks > 1) timer = setTimeout(fire, Math.max(0, origin - performance.now()));
    },
    /** Opens the remaining gates at once (a failed answer must not hold the model). */
    stop() {
      clearTimeout(timer);
      for (const g of gates) g.open();
    },
  };
}

/** Runs one level: `count` paced answers through `open`. */
export async function runLevel(
  open: OpenStream,
  script: (steps: ScriptStep[]) => string,
  count: number,
  options: LimitOptions,
  cpuMs: () => number,
): Promise<LevelResult> {
  const { chunks, paceMs, rampMs } = options;
  const cpuBefore = cpuMs();
  const benchBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const deadline = AbortSignal.timeout(rampMs + chunks * paceMs * 4 + 60_000);
  setMaxListeners(count + 10, deadline);
  const answers = Array.from({ length: count }, () => pacedAnswer(chunks, paceMs));
  // Every answer's schedule starts once all first chunks arrived (or their answers failed).
  let waiting = count;
  const started = () => {
    if (--waiting > 0) return;
    const origin = performance.now() + paceMs;
    answers.forEach((answer, k) => answer.start(origin + (k * paceMs) / count));
  };
  const settled = await Promise.allSettled(
    answers.map(async (answer, k) => {
      await sleep((k * rampMs) / count);
      const arrivals = new Float64Array(chunks).fill(NaN);
      let i = 0;
      try {
        const got = await open(
          script([answer.step]),
          (at) => {
            if (i === 0) started();
            if (i < chunks) arrivals[i] = at;
            i++;
          },
          deadline,
        );
        if (got !== chunks) throw new Error(`${got} of ${chunks} chunks`);
        return { sentAt: answer.sentAt, arrivals };
      } catch (error) {
        if (i === 0) started();
        throw error;
      } finally {
        answer.stop();
      }
    }),
  );
  const cpu = cpuMs() - cpuBefore;
  const bench = process.cpuUsage(benchBefore);
  const benchBusy = (bench.user + bench.system) / 1_000 / (performance.now() - wallBefore);
  const errors = new Map<string, number>();
  const delays: number[] = [];
  const all: number[] = [];
  // The middle of the answers: all N streams mid-answer (see the file's comment).
  const edge = Math.round(chunks * options.edge);
  let from = Infinity;
  let to = -Infinity;
  for (const s of settled) {
    if (s.status === 'rejected') {
      const key = (s.reason as Error).message.slice(0, 80);
      errors.set(key, (errors.get(key) ?? 0) + 1);
      continue;
    }
    const { sentAt, arrivals } = s.value;
    from = Math.min(from, sentAt[Math.max(1, edge)]!);
    to = Math.max(to, arrivals[chunks - 1 - edge]!);
    for (let i = 1; i < chunks; i++) {
      const delay = arrivals[i]! - sentAt[i]!;
      all.push(delay);
      if (i >= edge && i < chunks - edge) delays.push(delay);
    }
  }
  delays.sort((a, b) => a - b);
  all.sort((a, b) => a - b);
  const p99 = percentile(delays, 99);
  return {
    count,
    p50: percentile(delays, 50),
    p99,
    p99All: percentile(all, 99),
    max: delays.at(-1) ?? NaN,
    samples: delays.length,
    windowMs: Math.max(0, to - from),
    errors,
    cpuPerChunkUs: (cpu * 1_000) / (count * chunks),
    benchBusy,
  };
}

/** A level's trials and what they decided. */
export interface LevelSummary {
  count: number;
  /** The median trial's p99 within the bound, and no answer failed in any trial. */
  pass: boolean;
  /** The median of the trials' p99, ms. */
  p99: number;
  /** The median of the trials' CPU per chunk, µs. */
  cpuPerChunkUs: number;
  trials: LevelResult[];
}

export interface LimitResult {
  /** The largest level passed (0: not even the first). */
  limit: number;
  /** The smallest level failed, if any. */
  failedAt?: number;
  levels: LevelSummary[];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[(values.length - 1) >> 1]!;

/**
 * Ramps every variant together (see the file's comment) and returns each one's limit. Each
 * level runs `trials` times per variant, the variants taking turns, and is decided on the
 * median trial: this machine's other load only ever adds delay, and one stall of another
 * process can fail a trial. `baseline` (this process's own ceiling) is ramped only while
 * another variant still is, and not refined.
 */
export async function findLimits(
  variants: Map<string, OpenStream>,
  script: (steps: ScriptStep[]) => string,
  options: LimitOptions,
  /** The variant that is this process's own ceiling. */
  baseline: string,
  /** CPU so far of the process serving `variant`, ms. */
  cpuMs: (variant: string) => number,
  log: (line: string) => void,
): Promise<Map<string, LimitResult>> {
  const results = new Map<string, LimitResult>(
    [...variants.keys()].map((v) => [v, { limit: 0, levels: [] }]),
  );
  let round = 0;
  const order = (vs: string[]) => (round++ % 2 === 0 ? vs : [...vs].reverse());
  /** Runs each variant's level `trials` times, the variants taking turns, and decides. */
  const run = async (levels: Map<string, number>) => {
    const trials = new Map<string, LevelResult[]>([...levels.keys()].map((v) => [v, []]));
    for (let t = 0; t < options.trials; t++)
      for (const v of order([...levels.keys()])) {
        const count = levels.get(v)!;
        const result = await runLevel(variants.get(v)!, script, count, options, () => cpuMs(v));
        trials.get(v)!.push(result);
        const errors = [...result.errors].map(([m, n]) => `${n}× ${m}`).join('; ');
        log(
          `  ${v} at ${count}, trial ${t + 1}: per-chunk delay p50 ${fmt(result.p50)} p99 ${fmt(result.p99)} max ${fmt(result.max)} ms (p99 with the edges ${fmt(result.p99All)} ms) over ${result.samples} chunks in ${fmt(result.windowMs / 1_000)} s; CPU per chunk ${fmt(result.cpuPerChunkUs)} µs, this process ${Math.round(result.benchBusy * 100)} % busy${errors ? `; errors: ${errors}` : ''}`,
        );
        // Let the server finish what the level left (stored messages, collection).
        await sleep(500);
      }
    for (const [v, ts] of trials) {
      const count = levels.get(v)!;
      const p99 = median(ts.map((t) => t.p99));
      const pass = p99 <= options.boundMs && ts.every((t) => t.errors.size === 0);
      const r = results.get(v)!;
      r.levels.push({
        count,
        pass,
        p99,
        cpuPerChunkUs: median(ts.map((t) => t.cpuPerChunkUs)),
        trials: ts,
      });
      if (pass) r.limit = Math.max(r.limit, count);
      else r.failedAt = Math.min(r.failedAt ?? Infinity, count);
      log(`  ${v} at ${count}: ${pass ? 'pass' : 'FAIL'}, median p99 ${fmt(p99)} ms`);
    }
  };
  const servers = [...variants.keys()].filter((v) => v !== baseline);
  for (const count of options.levels) {
    const active = servers.filter((v) => results.get(v)!.failedAt === undefined);
    if (active.length === 0) break;
    if (results.get(baseline)?.failedAt === undefined) active.unshift(baseline);
    await run(new Map(active.map((v) => [v, count])));
  }
  for (let i = 0; i < options.refine; i++) {
    const levels = new Map<string, number>();
    for (const v of servers) {
      const r = results.get(v)!;
      if (r.failedAt === undefined) continue;
      const middle = Math.round((r.limit + r.failedAt) / 2);
      if (middle > r.limit && middle < r.failedAt) levels.set(v, middle);
    }
    if (levels.size > 0) await run(levels);
  }
  return results;
}

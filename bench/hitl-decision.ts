/**
 * HITL decision-to-resume latency across replicas: a decision posted to replica B (the decision
 * service: checks, `ifAbsent` write, bus wake) until the waiter on replica A has it. Each
 * "replica" has its own Redis connections (bus + ephemeral store) on one shared Redis.
 *
 * Baseline, measured in the same run on the same connections: a bare bus publish from B until
 * A's handler runs (the floor any cross-replica wake pays). Also shown: the bus message lost,
 * i.e. the waiter finding the decision only by its periodic re-read (the at-most-once fallback).
 *
 *   node --import tsx bench/hitl-decision.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), SAMPLES (per round, default 300), ROUNDS
 * (default 3; modes alternate each round and samples are pooled), FALLBACK_SAMPLES (default 20).
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { acquireSessionLease } from '../packages/agent-runtime/src/index.js';
import { createRedisBus, type Bus } from '../packages/bus/src/index.js';
import { createRedisEphemeralStore, type EphemeralStore } from '../packages/ephemeral/src/index.js';
import {
  ApprovalStore,
  DecisionService,
  waitForResolution,
  type ApprovalRecord,
} from '../packages/hitl/src/index.js';
import type { Database } from '../packages/store/src/index.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const samples = Number(process.env.SAMPLES ?? 300);
const rounds = Number(process.env.ROUNDS ?? 3);
const fallbackSamples = Number(process.env.FALLBACK_SAMPLES ?? 20);
const prefix = `bench-hitl:${process.pid}:`;

/** The decision path touches the database only for an orphaned approval, never here. */
const noDb = {
  query: () => Promise.reject(new Error('not used')),
  transaction: () => Promise.reject(new Error('not used')),
} as unknown as Database;

interface Replica {
  readonly bus: Bus;
  readonly ephemeral: EphemeralStore;
}
const replica = (): Replica => ({
  bus: createRedisBus({ url: redisUrl, prefix }),
  ephemeral: createRedisEphemeralStore({ url: redisUrl, prefix }),
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let counter = 0;

async function decisionSample(a: Replica, b: DecisionService, publish: boolean): Promise<number> {
  const store = new ApprovalStore(a.ephemeral);
  const record: ApprovalRecord = {
    requestId: `apr_bench_${counter++}`,
    userId: 'u',
    sessionId: 'sess_bench',
    runId: 'run_bench',
    toolCallId: 'call_1',
    toolName: 'send',
    args: { to: 'a' },
    allowedDecisions: ['approve', 'edit', 'reject'],
    parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    expiresAt: Date.now() + 60_000,
  };
  await store.create(record);
  let resolvedAt = 0;
  const waiting = waitForResolution(store, a.bus, record, new AbortController().signal).then(
    () => (resolvedAt = performance.now()),
  );
  await sleep(5); // the approval_request reaches the user; the waiter has subscribed
  const t0 = performance.now();
  if (publish) await b.submit('u', record.requestId, { decision: 'edit', tool_args: { to: 'b' } });
  else await new ApprovalStore(a.ephemeral).resolve(record, { outcome: 'approved' });
  await waiting;
  return (resolvedAt - t0) * 1_000;
}

async function publishSample(a: Replica, b: Replica): Promise<number> {
  const channel = `bench:${counter++}`;
  let t1 = 0;
  let resolve!: () => void;
  const got = new Promise<void>((r) => (resolve = r));
  const sub = await a.bus.subscribe(channel, () => {
    t1 = performance.now();
    resolve();
  });
  await sleep(5);
  const t0 = performance.now();
  await b.bus.publish(channel, 1);
  await got;
  await sub.unsubscribe();
  return (t1 - t0) * 1_000;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function main(): Promise<void> {
  const a = replica();
  const b = replica();
  const lease = await acquireSessionLease(
    a.ephemeral,
    'u_bench',
    'sess_bench',
    'run_bench',
    60_000,
  );
  const decisions = new DecisionService({ ephemeral: b.ephemeral, bus: b.bus, db: noDb });
  for (let i = 0; i < 30; i++) {
    await decisionSample(a, decisions, true);
    await publishSample(a, b);
  }
  const hitl: number[] = [];
  const bus: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < samples; i++) bus.push(await publishSample(a, b));
    for (let i = 0; i < samples; i++) hitl.push(await decisionSample(a, decisions, true));
  }
  const fallback: number[] = [];
  for (let i = 0; i < fallbackSamples; i++)
    fallback.push(await decisionSample(a, decisions, false));
  const rows = [
    ['bus publish → handler (baseline)', bus],
    ['decision → waiter resumed', hitl],
    ['decision, bus message lost (re-read)', fallback],
  ] as const;
  const base50 = pct(
    [...bus].sort((x, y) => x - y),
    50,
  );
  const base99 = pct(
    [...bus].sort((x, y) => x - y),
    99,
  );
  console.log(
    `node ${process.version}, ${cpus().length} cores, ${rounds}×${samples} samples (fallback ${fallbackSamples}), Redis ${redisUrl}`,
  );
  console.log('| path | p50 µs | p99 µs | p50 ratio | p99 ratio |\n|---|---|---|---|---|');
  for (const [name, values] of rows) {
    const sorted = [...values].sort((x, y) => x - y);
    const p50 = pct(sorted, 50);
    const p99 = pct(sorted, 99);
    console.log(
      `| ${name} | ${p50.toFixed(0)} | ${p99.toFixed(0)} | ${(p50 / base50).toFixed(1)}× | ${(p99 / base99).toFixed(1)}× |`,
    );
  }
  await lease?.release();
  await Promise.all([a, b].flatMap((r) => [r.bus.close(), r.ephemeral.close()]));
}

await main();

/**
 * One fault under traffic, the same way for every fault: tool calls at a steady rate, SSE runs
 * that stream through the fault, chat-platform deliveries before and during it, a scheduled task
 * synced during it (due after it) and a daily schedule that must survive it. The fault is
 * injected after a warm-up and healed after the profile's outage; recovery is the time from
 * the heal until nodes on both gateways answer, every replica is ready again and a new run
 * streams to `done`.
 */
import { expect } from 'vitest';
import { Redis } from 'ioredis';
import {
  callEffect,
  deliverUntilAcked,
  sseRun,
  toolCallTraffic,
  type SseRunResult,
} from './traffic.js';
import { countReplies, countTask, dueIn, syncTask, type FaultCluster } from './fault-cluster.js';
import type { FaultProfile } from './profile.js';
import { sleep, until, type Tally } from './tally.js';

export interface Fault {
  inject(): Promise<void>;
  heal(): Promise<void>;
  /** Checks while the fault holds (e.g. `/readyz` reports it). */
  during?(): Promise<void>;
}

export interface ScenarioOptions {
  /** Where to look for the daily schedule after the fault (the Redis the cluster uses). */
  redisUrl: string;
  /** Do scheduled tasks and chat messages take part (they need the worker). @default true */
  jobs?: boolean;
}

export async function runScenario(
  fc: FaultCluster,
  tally: Tally,
  profile: FaultProfile,
  fault: Fault,
  options: ScenarioOptions,
): Promise<void> {
  const { cluster, model, fleet } = fc;
  const jobs = options.jobs ?? true;
  const tag = `${tally.fault}-${Date.now().toString(36)}`;
  // A repeating task whose schedule lives in Redis: it must still be scheduled afterwards.
  const dailyId = `${tag}-daily`;
  if (jobs) expect((await syncTask(cluster, dailyId, { repeat_type: 'daily' })).status).toBe(200);

  const stop = new AbortController();
  const traffic = toolCallTraffic(tally, cluster, fleet, profile.toolCallsPerSecond, stop.signal);
  const outageBudget = profile.warmupMs + profile.outageMs + 60_000;
  const runs: Array<Promise<SseRunResult>> = [];
  for (let i = 0; i < profile.sseRuns; i++) {
    runs.push(
      sseRun(tally, cluster, model, i, {
        durationMs: profile.runStreamMs,
        deadlineMs: profile.runStreamMs + outageBudget,
      }),
    );
    await sleep(profile.warmupMs / profile.sseRuns);
  }
  const deliveries: Array<Promise<string | undefined>> = [];
  const deliver = (i: number) =>
    deliveries.push(deliverUntilAcked(tally, cluster, `${tag}-ev-${i}`, `oc_${tag}_${i}`, 60_000));
  if (jobs) for (let i = 0; i < profile.webhooks / 2; i++) deliver(i);

  await fault.inject();
  const injectedAt = Date.now();
  if (jobs) for (let i = profile.webhooks / 2; i < profile.webhooks; i++) deliver(i);
  // A task synced while the fault holds (retried until accepted, as the caller of sync would).
  const onceId = `${tag}-once`;
  const synced = jobs
    ? (async () => {
        for (;;) {
          const res = await syncTask(cluster, onceId, { run_mode: 'auto', ...dueIn(4) }).catch(
            () => undefined,
          );
          if (res?.status === 200) return;
          await sleep(500);
        }
      })()
    : Promise.resolve();
  await fault.during?.();
  await sleep(Math.max(0, profile.outageMs - (Date.now() - injectedAt)));
  await fault.heal();
  const healedAt = Date.now();

  // Recovery: every node callable through both api replicas, every replica ready, a new run done.
  let probe = 0;
  await until(
    async () => {
      const calls = await Promise.all(
        fleet.users.map((_, i) =>
          callEffect(tally, cluster, fleet, probe++ * 1000 + i, 'recovery probes'),
        ),
      );
      if (!calls.every((o) => o !== 'hung' && o.kind === 'succeeded')) return false;
      const ready = await fc.readiness();
      if (!ready.every((r) => r.status === 200)) return false;
      const run = await sseRun(tally, cluster, model, 10_000 + probe, {
        durationMs: 100,
        deadlineMs: 15_000,
        kind: 'recovery probes',
      });
      return run.outcome !== 'hung' && run.outcome.kind === 'succeeded';
    },
    60_000,
    'recovery',
    250,
  );
  tally.recoveryMs = Date.now() - healedAt;
  await sleep(2_000); // traffic after the recovery too
  stop.abort();
  await traffic;
  await Promise.all(runs);
  await synced;
  if (jobs) {
    const acked = await Promise.all(deliveries);
    await countTask(tally, fc, onceId, 60_000);
    await countReplies(tally, fc, acked, 60_000);
    const redis = new Redis(options.redisUrl);
    try {
      const kept = tally.counts('daily schedule kept');
      kept.made++;
      const key = `${cluster.prefix}bull:scheduled-tasks:repeat`;
      const present = await until(
        async () => (await redis.zscore(key, dailyId)) !== null,
        30_000,
        'daily schedule',
      ).then(
        () => true,
        () => false,
      );
      if (present) tally.add('daily schedule kept', { kind: 'succeeded' });
      else kept.lost++;
    } finally {
      redis.disconnect();
    }
  }
}

/** The suite's promise for every kind of traffic: nothing hung, unclear, lost or doubled. */
export function expectNoHarm(tally: Tally): void {
  const file = tally.write();
  console.log(`${tally.summary()}\nrecovered in ${tally.recoveryMs} ms; figures in ${file}`);
  for (const [kind, c] of tally.kinds) {
    expect({ kind, hung: c.hung, unclear: c.unclear, lost: c.lost, doubled: c.doubled }).toEqual({
      kind,
      hung: 0,
      unclear: 0,
      lost: 0,
      doubled: 0,
    });
    expect(c.succeeded + c.failed + c.unclear + c.hung).toBe(c.made);
  }
}

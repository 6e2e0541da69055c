/**
 * One fault under traffic, the same way for every fault: tool calls at a steady rate, SSE runs
 * that stream through the fault, chat-platform deliveries before and during it, a scheduled task
 * synced during it (due after it) and a daily schedule that must survive it. The fault is
 * injected after a warm-up and healed after the profile's outage; recovery is the time from
 * the heal until nodes on both gateways answer, every replica is ready again and a new run
 * streams to `done`.
 */
import { expect } from 'vitest';
import { Redis, type Cluster } from 'ioredis';
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
  /**
   * The same on a Redis Cluster: a client of it, and the name of the schedules' key (hash-tagged
   * there). @default a client of `redisUrl` and the standalone key
   */
  schedules?: { connect(): Redis | Cluster; key: string };
  /** Do scheduled tasks and chat messages take part (they need the worker). @default true */
  jobs?: boolean;
}

export async function runScenario(
  fc: FaultCluster,
  tally: Tally,
  profile: FaultProfile,
  fault: Fault,
  options: ScenarioOptions,
): Promise<{ runs: SseRunResult[] }> {
  const { cluster, model, fleet } = fc;
  const jobs = options.jobs ?? true;
  const tag = `${tally.fault}-${Date.now().toString(36)}`;
  // A repeating task whose schedule lives in Redis: it must still be scheduled afterwards.
  const dailyId = `${tag}-daily`;
  if (jobs) expect((await syncTask(cluster, dailyId, { repeat_type: 'daily' })).status).toBe(200);

  // Tasks due when the fault hits: their runs are under way (the worker's model answers slowly).
  const atFaultIds = Array.from(
    { length: jobs ? profile.tasksAtFault : 0 },
    (_, i) => `${tag}-at-${i}`,
  );
  const dueAtFault = dueIn(profile.warmupMs / 1000);
  for (const id of atFaultIds) {
    expect((await syncTask(cluster, id, { run_mode: 'auto', ...dueAtFault })).status).toBe(200);
  }

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
        const giveUp = Date.now() + 60_000;
        // A caller retries the same request: the same instant each time.
        const task = { run_mode: 'auto', ...dueIn(4 + profile.outageMs / 1000) };
        while (Date.now() < giveUp) {
          const outcome = await tally.track('task syncs', 10_000, async (signal) => {
            const res = await syncTask(cluster, onceId, task, signal);
            if (res.status === 200) return { kind: 'succeeded' };
            const body = (await res.json().catch(() => undefined)) as
              { error?: { code?: string } } | undefined;
            return body?.error?.code
              ? { kind: 'failed', code: body.error.code }
              : { kind: 'unclear', detail: `HTTP ${res.status}` };
          });
          if (outcome !== 'hung' && outcome.kind === 'succeeded') return;
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
  const ended = await Promise.all(runs);
  await synced;
  if (jobs) {
    const acked = await Promise.all(deliveries);
    // Jobs retry with backoff (1, 2, 4, … s): everything settles well within this.
    const settleBy = Date.now() + 90_000;
    for (const id of [onceId, ...atFaultIds]) await countTask(tally, fc, id, settleBy - Date.now());
    await countReplies(tally, fc, acked, Math.max(1_000, settleBy - Date.now()));
    const redis = options.schedules?.connect() ?? new Redis(options.redisUrl);
    try {
      const kept = tally.counts('daily schedule kept');
      kept.made++;
      const key = options.schedules?.key ?? `${cluster.prefix}bull:scheduled-tasks:repeat`;
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
  return { runs: ended };
}

/** The suite's promise for every kind of traffic: nothing hung, unclear, lost or doubled. */
export function expectNoHarm(tally: Tally): void {
  const file = tally.write();
  const recovered = tally.recoveryMs === undefined ? '' : `recovered in ${tally.recoveryMs} ms; `;
  console.log(`${tally.summary()}\n${recovered}figures in ${file}`);
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

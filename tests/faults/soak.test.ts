/**
 * A soak. Mixed load on the split deployment (2 api, 2 gateway, 1 worker on the
 * test's own Redis and the shared PostgreSQL): node tool calls at the profile's rate, SSE agent
 * runs back to back, chat-platform messages, scheduled runs and nodes connecting and leaving,
 * for `soakMs` (20 s in the `ci` profile, 10 min in `long`). Every replica's RSS, heap and open
 * handles (from its own `/metrics`) and Redis's memory are sampled throughout; the slopes over
 * the second half of the load are reported (docs/RELIABILITY.md). Checked: nothing failed, hung,
 * was lost or doubled; once the load ended and idle sockets closed, every replica holds no more
 * handles than before it (within 2); no Redis key without an expiry accumulates outside the job
 * queues, and those keep no more finished jobs than their count bound (3 here, so the `ci`
 * profile's 10 chat messages cross it) and no job key outside a state set; and in the `long`
 * profile, the JavaScript heap grows by no more than 1 MiB a minute on any replica over the
 * second half (RSS is reported).
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { NodeClient } from '@agent-backend/node-client';
import { parsePrometheusText, REPO_ROOT } from '@agent-backend/testing';
import { countReplies, countTask, dueIn, useFaultCluster, syncTask } from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { startOwnRedis, type OwnRedis } from './redis-server.js';
import { expectNoHarm } from './scenario.js';
import { sleep, Tally } from './tally.js';
import { deliverUntilAcked, sseRun, toolCallTraffic } from './traffic.js';

interface ReplicaSample {
  rss: number;
  heapUsed: number;
  /** Memory of Buffers and other objects outside V8's heap. */
  external: number;
  handles: number;
  /** Active handles by type (Socket, Timeout, ...), as prom-client reports them. */
  handleTypes: Record<string, number>;
}
interface Sample {
  /** Seconds since the load started. */
  t: number;
  replicas: Record<string, ReplicaSample>;
  redisUsedMemory: number;
  redisKeys: number;
}

const MiB = 2 ** 20;
/** Completed and failed jobs each queue keeps in this soak (`JOBS_KEEP_*_COUNT`). */
const KEEP_JOBS = 3;

describe('soak: mixed load on the split deployment', () => {
  const profile = faultProfile();
  let redis: OwnRedis;

  const faults = useFaultCluster('soak', async (own) => {
    redis = own(await startOwnRedis());
    // Small job retention, so even the `ci` profile's messages and tasks cross it.
    return {
      redisUrl: redis.url,
      env: {
        JOBS_KEEP_COMPLETED_COUNT: String(KEEP_JOBS),
        JOBS_KEEP_FAILED_COUNT: String(KEEP_JOBS),
      },
    };
  });

  it(
    'memory, handles and Redis stay flat under mixed load',
    { timeout: profile.soakMs + 240_000 },
    async () => {
      const { cluster, model, fleet } = faults.fc;
      const tally = new Tally(
        'soak',
        `${profile.soakMs / 1000} s of mixed load: tool calls, SSE runs, chat messages, scheduled runs, node churn`,
      );
      const replicas = [
        ...cluster.apis.map((p, i) => [`api-${i + 1}`, p.url] as const),
        ...cluster.gateways.map((p, i) => [`gateway-${i + 1}`, p.url] as const),
        ...cluster.workers.map((p, i) => [`worker-${i + 1}`, p.url] as const),
      ];
      const admin = new Redis(redis.url);
      const loadStarted = Date.now();
      const sample = async (): Promise<Sample> => {
        const entries = await Promise.all(
          replicas.map(async ([name, url]) => [name, await processMetrics(url)] as const),
        );
        const info = await admin.info('memory');
        return {
          t: (Date.now() - loadStarted) / 1000,
          replicas: Object.fromEntries(entries),
          redisUsedMemory: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN),
          redisKeys: await admin.dbsize(),
        };
      };

      try {
        await sleep(3_000); // the cluster settles after start (first heartbeats, schedules)
        const baseline = await sample();
        const censusBefore = await keyCensus(admin, cluster.prefix);
        const samples: Sample[] = [];
        const stop = new AbortController();
        const sampler = (async () => {
          while (!stop.signal.aborted) {
            samples.push(await sample());
            await sleep(profile.soakSampleMs);
          }
        })();

        const loops: Array<Promise<unknown>> = [];
        loops.push(toolCallTraffic(tally, cluster, fleet, profile.toolCallsPerSecond, stop.signal));
        // SSE runs back to back, a quarter of the profile's open runs at any time.
        let runIndex = 0;
        for (let lane = 0; lane < Math.max(2, profile.sseRuns / 4); lane++) {
          loops.push(
            (async () => {
              while (!stop.signal.aborted) {
                await sseRun(tally, cluster, model, runIndex++, {
                  durationMs: 1_500,
                  deadlineMs: 30_000,
                });
              }
            })(),
          );
        }
        // A chat message every 2 s (3 s in the long profile, within the worker's scripted answers).
        const acked: Array<Promise<string | undefined>> = [];
        const tag = `soak-${Date.now().toString(36)}`;
        loops.push(
          (async () => {
            for (let i = 0; !stop.signal.aborted; i++) {
              acked.push(
                deliverUntilAcked(tally, cluster, `${tag}-ev-${i}`, `oc_${tag}_${i % 5}`, 30_000),
              );
              await sleep(profile.name === 'long' ? 3_000 : 2_000);
            }
          })(),
        );
        // A one-off scheduled task every 10 s (5 s in ci), each due 2 s after it was synced.
        const tasks: string[] = [];
        loops.push(
          (async () => {
            for (let i = 0; !stop.signal.aborted; i++) {
              // Padded: the model's requests are matched by `run <id>`, and task-1 must not match task-10.
              const id = `${tag}-task-${String(i).padStart(4, '0')}`;
              const res = await syncTask(cluster, id, { run_mode: 'auto', ...dueIn(2) });
              if (res.status === 200) tasks.push(id);
              else tally.add('task syncs', { kind: 'failed', code: `HTTP ${res.status}` });
              await sleep(profile.name === 'long' ? 10_000 : 5_000);
            }
          })(),
        );
        // Node churn: a node connects to each gateway in turn, stays a moment and leaves.
        loops.push(
          (async () => {
            for (let i = 0; !stop.signal.aborted; i++) {
              const counts = tally.counts('node connections');
              counts.made++;
              const userId = `churn-${i % 20}`;
              const node = new NodeClient({
                url: cluster.gateways[i % cluster.gateways.length]!.url,
                kind: 'extension',
                userId,
                nodeId: `churn-node-${i}`,
                getToken: () => cluster.token(userId),
              });
              try {
                await node.start();
                await sleep(500);
                tally.add('node connections', { kind: 'succeeded' });
              } catch (error) {
                tally.add('node connections', { kind: 'unclear', detail: String(error) });
              } finally {
                await node.close();
              }
              await sleep(500);
            }
          })(),
        );

        await sleep(profile.soakMs);
        stop.abort();
        await Promise.all(loops);
        await sampler;

        // Every acknowledged message answered once, every task run once.
        const settleBy = Date.now() + 60_000;
        for (const id of tasks) await countTask(tally, faults.fc, id, settleBy - Date.now());
        await countReplies(
          tally,
          faults.fc,
          await Promise.all(acked),
          Math.max(1_000, settleBy - Date.now()),
        );
        // Handles go back to where they were before the load (the fleet's nodes stay connected)
        // once idle keep-alive sockets close: the test's HTTP client keeps them 4 s, the
        // replicas' own clients (model, chat platform) a few seconds more. A leak never comes
        // back down, so the check waits up to 30 s for every replica to be within 2 handles.
        const handlesAbove = (s: Sample) =>
          replicas
            .filter(([name]) => s.replicas[name]!.handles > baseline.replicas[name]!.handles + 2)
            .map(
              ([name]) =>
                `${name}: ${baseline.replicas[name]!.handles} → ${s.replicas[name]!.handles} (${JSON.stringify(baseline.replicas[name]!.handleTypes)} → ${JSON.stringify(s.replicas[name]!.handleTypes)})`,
            );
        await sleep(6_000);
        let after = await sample();
        for (
          const until = Date.now() + 30_000;
          handlesAbove(after).length > 0 && Date.now() < until;
        ) {
          await sleep(2_000);
          after = await sample();
        }
        const censusAfter = await keyCensus(admin, cluster.prefix);
        const queues = await queueCensus(admin, `${cluster.prefix}bull:`, censusAfter);

        // The slopes over the second half of the load, per minute.
        const half = samples.filter((s) => s.t >= profile.soakMs / 2000);
        const slope = (value: (s: Sample) => number) =>
          leastSquaresSlope(half.map((s) => [s.t / 60, value(s)] as const));
        const slopes = Object.fromEntries(
          replicas.map(([name]) => [
            name,
            {
              rssMiBPerMin: slope((s) => s.replicas[name]!.rss / MiB),
              heapMiBPerMin: slope((s) => s.replicas[name]!.heapUsed / MiB),
              externalMiBPerMin: slope((s) => s.replicas[name]!.external / MiB),
              handlesPerMin: slope((s) => s.replicas[name]!.handles),
            },
          ]),
        );
        const redisSlope = {
          usedMemoryMiBPerMin: slope((s) => s.redisUsedMemory / MiB),
          keysPerMin: slope((s) => s.redisKeys),
        };
        const grownWithoutExpiry = Object.entries(censusAfter)
          .filter(
            ([family, c]) =>
              !family.startsWith('bull:') &&
              c.withoutTtl > (censusBefore[family]?.withoutTtl ?? 0) + 3,
          )
          .map(
            ([family, c]) =>
              `${family}: ${censusBefore[family]?.withoutTtl ?? 0} → ${c.withoutTtl}`,
          );

        for (const [name] of replicas) {
          const s = slopes[name]!;
          const b = baseline.replicas[name]!;
          const a = after.replicas[name]!;
          tally.note(
            `${name}: RSS ${(b.rss / MiB).toFixed(0)} → ${(a.rss / MiB).toFixed(0)} MiB (second half ${fmt(s.rssMiBPerMin)} MiB/min), heap ${fmt(s.heapMiBPerMin)} MiB/min, external ${fmt(s.externalMiBPerMin)} MiB/min, handles ${b.handles} → ${a.handles} (second half ${fmt(s.handlesPerMin)}/min)`,
          );
        }
        tally.note(
          `Redis: used memory ${(baseline.redisUsedMemory / MiB).toFixed(1)} → ${(after.redisUsedMemory / MiB).toFixed(1)} MiB (second half ${fmt(redisSlope.usedMemoryMiBPerMin)} MiB/min), keys ${baseline.redisKeys} → ${after.redisKeys} (${fmt(redisSlope.keysPerMin)}/min); families that grew: ${describeGrowth(censusBefore, censusAfter)}`,
        );
        tally.note(
          `Redis: BullMQ jobs kept per queue (bound ${KEEP_JOBS} completed + ${KEEP_JOBS} failed): ${Object.entries(
            queues,
          )
            .map(
              ([queue, q]) =>
                `${queue} ${q.jobKeys} job keys (${q.completed} completed, ${q.failed} failed, ${q.pending} not finished)`,
            )
            .join(', ')}`,
        );
        const dir = join(REPO_ROOT, 'artifacts', 'faults');
        mkdirSync(dir, { recursive: true });
        const file = join(
          dir,
          profile.name === 'ci' ? 'soak-samples.json' : `soak-samples.${profile.name}.json`,
        );
        writeFileSync(
          file,
          `${JSON.stringify({ baseline, samples, after, slopes, redisSlope, censusBefore, censusAfter }, null, 2)}\n`,
        );

        expectNoHarm(tally);
        for (const [kind, c] of tally.kinds)
          expect({ kind, failed: c.failedBy }).toEqual({ kind, failed: {} });
        expect(handlesAbove(after)).toEqual([]);
        expect(grownWithoutExpiry).toEqual([]);
        // The job queues keep their finished jobs by count (`JOBS_KEEP_*`): the chat messages
        // alone outnumber the bound, and no job key outlives its place in a state set.
        expect(
          queues['chat-messages']!.completed + queues['chat-messages']!.failed,
        ).toBeGreaterThan(0);
        for (const [queue, q] of Object.entries(queues)) {
          expect({ queue, completed: Math.min(q.completed, KEEP_JOBS) }).toEqual({
            queue,
            completed: q.completed,
          });
          expect({ queue, failed: Math.min(q.failed, KEEP_JOBS) }).toEqual({
            queue,
            failed: q.failed,
          });
          // One key per job (its hash), measured a moment apart from the sets: a job added in
          // between is the only slack.
          expect(q.jobKeys).toBeLessThanOrEqual(q.completed + q.failed + q.pending + 2);
        }
        // The JavaScript heap is what a leak of ours grows; RSS also moves with the allocator
        // and is reported (docs/RELIABILITY.md), not asserted.
        if (profile.name === 'long') {
          const growing = replicas
            .filter(([name]) => slopes[name]!.heapMiBPerMin > 1)
            .map(([name]) => `${name}: heap ${fmt(slopes[name]!.heapMiBPerMin)} MiB/min`);
          expect(growing).toEqual([]);
        }
      } finally {
        admin.disconnect();
      }
    },
  );
});

/** RSS, heap used and active handles, from a replica's Prometheus metrics. */
async function processMetrics(url: string): Promise<ReplicaSample> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
  const metrics = parsePrometheusText(await res.text());
  const value = (name: string) => {
    if (metrics.series(name).length === 0) throw new Error(`${url}/metrics has no ${name}`);
    return metrics.value(name);
  };
  return {
    rss: value('process_resident_memory_bytes'),
    heapUsed: value('nodejs_heap_size_used_bytes'),
    external: value('nodejs_external_memory_bytes'),
    handles: value('nodejs_active_handles_total'),
    handleTypes: Object.fromEntries(
      metrics.series('nodejs_active_handles').map((s) => [s.labels.type ?? '?', s.value]),
    ),
  };
}

interface FamilyCount {
  keys: number;
  withoutTtl: number;
}

/**
 * The deployment's Redis keys by family (the key with every id-like segment replaced by `*`):
 * how many, and how many have no expiry.
 */
async function keyCensus(redis: Redis, prefix: string): Promise<Record<string, FamilyCount>> {
  const keys = await redis.keys(`${prefix}*`);
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.pttl(key);
  const ttls = (await pipeline.exec()) ?? [];
  const census: Record<string, FamilyCount> = {};
  keys.forEach((key, i) => {
    const family = key
      .slice(prefix.length)
      .split(':')
      .map((part) => (/\d/.test(part) || part.length > 24 ? '*' : part))
      .join(':');
    const entry = (census[family] ??= { keys: 0, withoutTtl: 0 });
    entry.keys++;
    if (ttls[i]?.[1] === -1) entry.withoutTtl++;
  });
  return census;
}

interface QueueCensus {
  /** Keys of single jobs (their hashes), from the key census. */
  jobKeys: number;
  completed: number;
  failed: number;
  /** Waiting, active, delayed and prioritized jobs. */
  pending: number;
}

/**
 * Per BullMQ queue of the deployment: how many job hashes Redis holds (the census families
 * `bull:<queue>:*` and `bull:<queue>:once:*:*`, `repeat:*:*`: keys named by a job id) and how
 * many jobs each state set holds.
 */
async function queueCensus(
  redis: Redis,
  bullPrefix: string,
  census: Record<string, FamilyCount>,
): Promise<Record<string, QueueCensus>> {
  const result: Record<string, QueueCensus> = {};
  for (const queue of ['chat-messages', 'scheduled-tasks', 'kb-ingest']) {
    const key = (suffix: string) => `${bullPrefix}${queue}:${suffix}`;
    const [completed, failed, waiting, active, delayed, prioritized] = await Promise.all([
      redis.zcard(key('completed')),
      redis.zcard(key('failed')),
      redis.llen(key('wait')),
      redis.llen(key('active')),
      redis.zcard(key('delayed')),
      redis.zcard(key('prioritized')),
    ]);
    const jobFamilies = [`${queue}:*`, `${queue}:once:*:*`, `${queue}:repeat:*:*`];
    const jobKeys = jobFamilies.reduce((n, f) => n + (census[`bull:${f}`]?.keys ?? 0), 0);
    result[queue] = {
      jobKeys,
      completed,
      failed,
      pending: waiting + active + delayed + prioritized,
    };
  }
  return result;
}

function describeGrowth(
  before: Record<string, FamilyCount>,
  after: Record<string, FamilyCount>,
): string {
  const grown = Object.entries(after)
    .map(([family, c]) => [family, c.keys - (before[family]?.keys ?? 0), c.withoutTtl] as const)
    .filter(([, delta]) => delta > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(
      ([family, delta, noTtl]) => `${family} +${delta}${noTtl ? ` (${noTtl} without expiry)` : ''}`,
    );
  return grown.length ? grown.join(', ') : 'none';
}

/** The slope of the least-squares line through `points` (x, y). */
function leastSquaresSlope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

const fmt = (v: number) => (v >= 0 ? '+' : '') + v.toFixed(2);

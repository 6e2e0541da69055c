/**
 * Network faults: a TCP proxy (node:net) between every role and Redis, and between every role and
 * PostgreSQL, stalls (forwards nothing, connections stay open) or drops (resets every connection
 * and refuses new ones) their traffic for the profile's outage, under the same traffic as the
 * Redis restart. `/readyz` must report the outage (503 naming the failing check) while it lasts
 * and recover after it.
 */
import { describe, expect, it } from 'vitest';
import {
  testDatabaseUrl,
  startTcpProxy,
  type ProxyMode,
  type TcpProxy,
} from '@agent-backend/testing';
import {
  dueIn,
  readTask,
  syncTask,
  taskExecutions,
  useFaultCluster,
  viaProxy,
  type TaskState,
} from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { startOwnRedis, type OwnRedis } from './redis-server.js';
import { expectNoHarm, runScenario, type Fault } from './scenario.js';
import { Tally, until } from './tally.js';

describe('network faults between the roles and their engines', () => {
  const profile = faultProfile();
  let redis: OwnRedis;
  let redisProxy: TcpProxy;
  let pgProxy: TcpProxy;

  const faults = useFaultCluster('network-faults', async (own) => {
    redis = own(await startOwnRedis());
    redisProxy = own(await startTcpProxy({ host: '127.0.0.1', port: redis.port }));
    const pg = new URL(testDatabaseUrl());
    pgProxy = own(await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) }));
    return {
      redisUrl: viaProxy(redis.url, redisProxy),
      databaseUrl: viaProxy(testDatabaseUrl(), pgProxy),
    };
  });

  /** The proxy in `mode` for the outage; `/readyz` of the roles using `check` must say so. */
  const proxyFault = (tally: Tally, proxy: TcpProxy, mode: ProxyMode, check: string): Fault => ({
    inject: async () => proxy.setMode(mode),
    heal: async () => proxy.setMode('forward'),
    during: async () => {
      const kind = 'readyz reports the outage';
      const counts = tally.counts(kind);
      counts.made++;
      let seen: unknown;
      const reported = await until(
        async () => {
          const ready = await faults.fc.readiness();
          // The gateway serves nothing from PostgreSQL, so only Redis is among its checks.
          const concerned = ready.filter((r) => check === 'redis' || r.role !== 'gateway');
          seen = concerned;
          return concerned.every(
            (r) =>
              r.status === 503 &&
              (r.body as { checks?: Record<string, { ok: boolean }> }).checks?.[check]?.ok ===
                false,
          );
        },
        profile.outageMs - 500,
        'readyz',
        200,
      ).then(
        () => true,
        () => false,
      );
      if (reported) tally.add(kind, { kind: 'succeeded' });
      else tally.add(kind, { kind: 'unclear', detail: JSON.stringify(seen).slice(0, 400) });
    },
  });

  for (const [engine, mode] of [
    ['redis', 'stall'],
    ['redis', 'drop'],
    ['postgres', 'stall'],
    ['postgres', 'drop'],
  ] as const) {
    it(`${engine}: the proxy ${mode}s every connection`, async () => {
      const tally = new Tally(
        `${engine}-${mode}`,
        mode === 'stall'
          ? `the proxy to ${engine === 'redis' ? 'Redis' : 'PostgreSQL'} forwards nothing (connections stay open)`
          : `the proxy to ${engine === 'redis' ? 'Redis' : 'PostgreSQL'} resets every connection and refuses new ones`,
      );
      const proxy = engine === 'redis' ? redisProxy : pgProxy;
      await runScenario(faults.fc, tally, profile, proxyFault(tally, proxy, mode, engine), {
        redisUrl: redis.url,
      });
      expectNoHarm(tally);
      expect(tally.counts('readyz reports the outage').succeeded).toBe(1);
    });
  }

  it('postgres: a scheduled run whose store writes time out in a stall runs again after it', async () => {
    const { cluster, model } = faults.fc;
    const worker = cluster.workers[0]!;
    const taskId = `stalled-run-${Date.now().toString(36)}`;
    expect((await syncTask(cluster, taskId, { run_mode: 'auto', ...dueIn(2) })).status).toBe(200);
    // The worker's model streams its answer for 1.5 s: the stall starts while it does, so the
    // run's next store write (the answer) gets no reply and times out.
    await until(() => taskExecutions(model, taskId) === 1, 30_000, 'the run to start');
    pgProxy.setMode('stall');
    try {
      await until(
        () => worker.stdout.some((l) => l.includes(taskId) && l.includes('"msg":"run failed')),
        30_000,
        'the run to fail on the stalled store',
      );
    } finally {
      pgProxy.setMode('forward');
    }
    // The store answers again at once: the occurrence is not recorded failed, its job's next
    // attempt runs it again and it succeeds, in one run row.
    let state: TaskState | undefined;
    await until(
      async () => {
        state = await readTask(cluster, taskId);
        return ['succeeded', 'failed'].includes(state.runs[0]?.status ?? '');
      },
      60_000,
      'the occurrence to finish',
      250,
    );
    expect(state!.runs).toHaveLength(1);
    expect(state!.runs[0]).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(taskExecutions(model, taskId)).toBe(2);
  });
});

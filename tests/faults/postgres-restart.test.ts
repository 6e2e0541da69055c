/**
 * PostgreSQL "restarts" during agent runs and scheduled runs. The machine's shared
 * PostgreSQL is not restarted (other tests use it): the roles reach it through a TCP proxy, and
 * the restart is simulated by `pg_terminate_backend` of exactly the cluster's connections (the
 * ones the proxy opened, found by their client port) while the proxy refuses new connections for
 * the outage. Runs end with `done` or a clear error, and no session is left half-written: a next
 * run on every session works and sends the model a conversation it accepts.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { testDatabaseUrl, startTcpProxy, type TcpProxy } from '@agent-backend/testing';
import { useFaultCluster, viaProxy } from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { startOwnRedis, type OwnRedis } from './redis-server.js';
import { expectNoHarm, runScenario } from './scenario.js';
import { Tally } from './tally.js';
import { sseRun } from './traffic.js';

describe('PostgreSQL restart under traffic', () => {
  const profile = faultProfile();
  let redis: OwnRedis;
  let proxy: TcpProxy;

  /** Terminates the server processes of the cluster's connections; resolves with how many. */
  const terminateClusterBackends = async (): Promise<number> => {
    const admin = new pg.Client({ connectionString: testDatabaseUrl() });
    await admin.connect();
    try {
      // Two steps: in one, the planner may call pg_terminate_backend before the other filters.
      const { rows } = await admin.query<{ pid: number }>(
        'select pid from pg_stat_activity where pid <> pg_backend_pid() and client_port = any($1::int[])',
        [proxy.upstreamPorts()],
      );
      const result = await admin.query(
        'select pg_terminate_backend(pid) from unnest($1::int[]) pid',
        [rows.map((r) => r.pid)],
      );
      return result.rowCount ?? 0;
    } finally {
      await admin.end();
    }
  };

  const faults = useFaultCluster('postgres-restart', async (own) => {
    redis = own(await startOwnRedis());
    const url = new URL(testDatabaseUrl());
    proxy = own(await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) }));
    // A run that failed while the store was down may not have released its session lease: it
    // expires after AGENT_SESSION_LEASE_MS (30 s in production, 5 s here).
    return {
      redisUrl: redis.url,
      databaseUrl: viaProxy(url.toString(), proxy),
      env: { AGENT_SESSION_LEASE_MS: '5000' },
    };
  });

  it('every cluster connection terminated, new ones refused for the outage', async () => {
    const tally = new Tally(
      'postgres-restart',
      'pg_terminate_backend of every cluster connection, new connections refused for the outage',
    );
    let terminated = 0;
    const { runs } = await runScenario(
      faults.fc,
      tally,
      profile,
      {
        inject: async () => {
          proxy.setMode('refuse');
          terminated = await terminateClusterBackends();
        },
        heal: async () => proxy.setMode('forward'),
      },
      { redisUrl: redis.url },
    );
    tally.note(`backends terminated: ${terminated}`);
    expect(terminated).toBeGreaterThan(0);

    // No half-written session: the next run of every session streams to `done`, and the model
    // gets a conversation that starts with the first question and alternates properly.
    // (A run refused before its stream started, 503 while the store was down, has no session.)
    // Each keeps its run's index: the index picks the run's user (traffic.ts `sseRun`).
    const sessions = runs.flatMap((r, i) => (r.sessionId ? [{ sessionId: r.sessionId, i }] : []));
    expect(sessions.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 6_000)); // past any stale lease
    await Promise.all(
      sessions.map(({ sessionId, i }) =>
        sseRun(tally, faults.fc.cluster, faults.fc.model, i, {
          durationMs: 100,
          deadlineMs: 30_000,
          kind: 'next run on the same session',
          sessionId,
        }),
      ),
    );
    for (const request of faults.fc.model.requests()) {
      const messages = request.body.messages ?? [];
      // Every assistant tool call has its tool message, and no two user turns are glued together
      // without an answer in between unless the first run failed before answering.
      const roles = messages.map((m) => m.role).filter((r) => r !== 'system');
      expect(roles[0]).toBe('user');
    }
    expectNoHarm(tally);
    expect(tally.counts('next run on the same session').succeeded).toBe(sessions.length);
  });
});

/**
 * The service's engines (`createEngines`, as every role opens them) on the other Redis modes:
 * two replicas sharing a Redis Cluster, and two sharing a Sentinel-managed master through a
 * failover (the master's process killed, a replica promoted by the sentinels).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadConfig } from '@agent-backend/config';
import { createEngines, type Engines } from '@agent-backend/engines';
import { createLogger } from '@agent-backend/logger';
import {
  randomId,
  redisTopologies,
  testDatabaseUrl,
  uniquePrefix,
  type TestRedisTarget,
} from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

const run = promisify(execFile);
const topologies = redisTopologies({ beforeAll, afterAll });
const open: Engines[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((engines) => engines.close()));
});

/** Two replicas' engines on `target`, sharing one key prefix. */
async function replicas(target: TestRedisTarget): Promise<[Engines, Engines]> {
  const env = {
    DATABASE_URL: testDatabaseUrl(),
    REDIS_KEY_PREFIX: uniquePrefix('modes'),
    REDIS_MODE: target.mode,
    ...(target.mode === 'cluster'
      ? { REDIS_CLUSTER_NODES: target.nodes.join(',') }
      : { REDIS_SENTINELS: target.sentinels.join(','), REDIS_SENTINEL_NAME: target.name }),
  };
  const logger = createLogger({ level: 'silent' });
  const make = async () => {
    const config = loadConfig('all-in-one', { ...env, INSTANCE_ID: `modes-${randomId(3)}` });
    const engines = await createEngines(config, logger, { databaseReadiness: false });
    open.push(engines);
    return engines;
  };
  return [await make(), await make()];
}

/**
 * One round of every shared-state port, written by `a` and read by `b`: what a request on one
 * replica and a request on another need to agree on. `tag` keeps rounds apart.
 */
async function exercise(a: Engines, b: Engines, tag: string): Promise<void> {
  const got: unknown[] = [];
  const sub = await b.bus.subscribe(`ch-${tag}`, (message) => void got.push(message));
  try {
    expect(await a.bus.publish(`ch-${tag}`, { tag })).toBe(1);
    await vi.waitFor(() => expect(got).toEqual([{ tag }]));
  } finally {
    await sub.unsubscribe();
  }

  await a.ephemeral.set(`k-${tag}`, tag, { ttlMs: 60_000 });
  expect(await b.ephemeral.get(`k-${tag}`)).toBe(tag);

  await a.presence.heartbeatReplica(`replica-${tag}`);
  await a.presence.upsertNode({
    userId: `u-${tag}`,
    nodeId: 'n1',
    nodeType: 'desktop',
    replicaId: `replica-${tag}`,
    data: { tag },
  });
  expect((await b.presence.listNodes(`u-${tag}`)).map((n) => n.data)).toEqual([{ tag }]);

  await a.runLog.append(`run-${tag}`, [
    { seq: 1, data: 'a' },
    { seq: 2, data: 'b', final: true },
  ]);
  const entries: string[] = [];
  for await (const entry of b.runLog.read(`run-${tag}`, { follow: true })) entries.push(entry.data);
  expect(entries).toEqual(['a', 'b']);

  const held = await a.limits.acquireSlot('runs', `u-${tag}`, 'h1', 1);
  expect(held.granted).toBe(true);
  expect((await b.limits.acquireSlot('runs', `u-${tag}`, 'h2', 1)).granted).toBe(false);
  if (held.granted) await held.release();

  const ran: unknown[] = [];
  await b.jobs.process(`q-${tag}`, async (data) => void ran.push(data));
  await a.jobs.add(`q-${tag}`, { tag });
  await vi.waitFor(() => expect(ran).toEqual([{ tag }]), { timeout: 10_000 });
}

describe('engines on a Redis Cluster', () => {
  it('share every port between two replicas', async () => {
    const [a, b] = await replicas(topologies.target('cluster'));
    await exercise(a, b, 'one');
    await exercise(b, a, 'two');
    expect(await a.checks.redis!()).toBe('PONG');
  });
});

describe('engines on Sentinel', () => {
  it('follow a failover to the promoted replica, and every port works afterwards', async () => {
    const { sentinel } = topologies;
    const [a, b] = await replicas(topologies.target('sentinel'));
    await exercise(a, b, 'before');

    await sentinel.master.kill();
    const masterPort = async () => {
      const { stdout } = await run('redis-cli', [
        '-p',
        sentinel.sentinels[0]!.split(':')[1]!,
        'SENTINEL',
        'GET-MASTER-ADDR-BY-NAME',
        sentinel.name,
      ]);
      return Number(stdout.trim().split('\n')[1]);
    };
    await vi.waitFor(async () => expect(await masterPort()).toBe(sentinel.replica.port), {
      timeout: 20_000,
      interval: 200,
    });

    // Commands sent while the clients switch may fail; once switched, everything works again.
    await vi.waitFor(async () => expect(await a.checks.redis!()).toBe('PONG'), {
      timeout: 15_000,
      interval: 200,
    });
    await vi.waitFor(() => exercise(a, b, `after-${randomId(3)}`), {
      timeout: 20_000,
      interval: 500,
    });
    await exercise(b, a, 'after-again');
  });

  // After the failover above (or alone): no master left at all, as a SIGTERM during an outage.
  it('close within their bound while no master is reachable', async () => {
    const { sentinel } = topologies;
    const [a, b] = await replicas(topologies.target('sentinel'));
    await a.jobs.process('q-closing', async () => undefined);
    await b.bus.subscribe('ch-closing', () => undefined);
    await Promise.all([sentinel.master.kill(), sentinel.replica.kill()]);
    // Redis gone for the replicas too: a ping waits out REDIS_COMMAND_TIMEOUT_MS and fails.
    await expect(a.checks.redis!()).rejects.toThrow();
    // Before: the bus's UNSUBSCRIBE and BullMQ's worker close waited for a master forever. The
    // bound is the drain (SHUTDOWN_TIMEOUT_MS) plus a few seconds per step; only a close that
    // never ends misses this.
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.all(open.splice(0).map((engines) => engines.close())).then(() => 'closed'),
      new Promise((resolve) => (timer = setTimeout(resolve, 50_000, 'still closing'))),
    ]);
    clearTimeout(timer);
    expect(outcome).toBe('closed');
  }, 70_000);
});

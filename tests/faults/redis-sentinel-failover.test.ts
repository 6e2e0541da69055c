/**
 * REDIS_MODE=sentinel, the master's process killed (SIGKILL) under traffic: node tool calls, SSE
 * runs, chat-platform deliveries and scheduled tasks on 2 api, 2 gateway and 2 worker replicas.
 * The sentinels promote the replica; nobody heals anything. Nothing may hang, be lost or be
 * doubled; every node is listed again within one heartbeat interval of the promotion; a run
 * ends `unavailable` only when its own write failed.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  startTestRedisSentinel,
  testRedisUrl,
  type TestRedisSentinel,
} from '@agent-backend/testing';
import { describe, expect, it } from 'vitest';
import { everyNodeListed as everyNodeListedIn, useFaultCluster } from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { expectNoHarm, runScenario } from './scenario.js';
import { Tally, until } from './tally.js';

const run = promisify(execFile);
/** The fleet's node heartbeat (tests/faults/traffic.ts). */
const NODE_HEARTBEAT_MS = 2_000;

describe('Sentinel failover under traffic', () => {
  const profile = faultProfile();
  let sentinel: TestRedisSentinel;

  const faults = useFaultCluster('redis-sentinel-failover', async (own) => {
    sentinel = await startTestRedisSentinel();
    own({ close: () => sentinel.stop() });
    return {
      workers: 2,
      env: {
        REDIS_MODE: 'sentinel',
        REDIS_SENTINELS: sentinel.sentinels.join(','),
        REDIS_SENTINEL_NAME: sentinel.name,
      },
    };
  });

  /** The master's port the sentinels name now. */
  const masterPort = async () => {
    const [, port] = sentinel.sentinels[0]!.split(':');
    const { stdout } = await run('redis-cli', [
      ...['-p', port!, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', sentinel.name],
    ]);
    return Number(stdout.trim().split('\n')[1]);
  };

  const everyNodeListed = () => everyNodeListedIn(faults.fc);

  it('master killed (SIGKILL), replica promoted by the sentinels', async () => {
    const tally = new Tally(
      'redis-sentinel-failover',
      'REDIS_MODE=sentinel: the master killed (SIGKILL) mid-traffic, the replica promoted',
    );
    expect(await everyNodeListed()).toBe(true);
    let killedAt = 0;
    let promotedAt = 0;
    let relistMs = Number.NaN;
    const url = new URL(testRedisUrl());
    url.host = `127.0.0.1:${sentinel.replica.port}`;
    await runScenario(
      faults.fc,
      tally,
      profile,
      {
        inject: async () => {
          await sentinel.master.kill();
          killedAt = Date.now();
        },
        during: async () => {
          await until(
            async () => (await masterPort()) === sentinel.replica.port,
            30_000,
            'promotion',
          );
          promotedAt = Date.now();
          relistMs = await until(everyNodeListed, 30_000, 'every node listed again', 50);
        },
        heal: async () => undefined,
      },
      { redisUrl: url.toString() },
    );
    // A run ends `unavailable` only when one of its own writes failed, which its replica logs.
    const { cluster } = faults.fc;
    const failedWrites = [...cluster.apis, ...cluster.workers]
      .flatMap((p) => p.stdout)
      .filter((line) => line.includes('run failed: a dependency is unavailable')).length;
    const unavailableRuns = tally.counts('sse runs').failedBy.unavailable ?? 0;
    tally.note(`promotion ${promotedAt - killedAt} ms after the kill (sentinels' view)`);
    tally.note(`every node listed again ${relistMs} ms after the promotion`);
    tally.note(
      `runs ended unavailable: ${unavailableRuns}; runs whose write failed: ${failedWrites}`,
    );
    expectNoHarm(tally);
    expect(relistMs).toBeLessThanOrEqual(NODE_HEARTBEAT_MS);
    expect(unavailableRuns).toBeLessThanOrEqual(failedWrites);
  });
});

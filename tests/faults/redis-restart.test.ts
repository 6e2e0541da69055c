/**
 * Redis restarted (empty, as a Redis without persistence comes back) and, separately,
 * every client connection killed (`CLIENT KILL TYPE normal`, then `TYPE pubsub`), under node
 * tool calls, open SSE runs, chat-platform deliveries and scheduled tasks. Nothing may hang, be
 * lost or be doubled, and everything recovers without restarting a process.
 */
import { describe, it } from 'vitest';
import { useFaultCluster } from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { startOwnRedis, type OwnRedis } from './redis-server.js';
import { expectNoHarm, runScenario } from './scenario.js';
import { Tally } from './tally.js';

describe('Redis faults under traffic', () => {
  const profile = faultProfile();
  let redis: OwnRedis;

  const faults = useFaultCluster('redis-restart', async (own) => {
    redis = own(await startOwnRedis());
    return { redisUrl: redis.url };
  });

  it('Redis stopped and started again, empty', async () => {
    const tally = new Tally('redis-restart', 'Redis stopped (SIGTERM) and started again empty');
    await runScenario(
      faults.fc,
      tally,
      profile,
      { inject: () => redis.stop(), heal: () => redis.start() },
      { redisUrl: redis.url },
    );
    expectNoHarm(tally);
  });

  it('CLIENT KILL TYPE normal, then TYPE pubsub', async () => {
    const tally = new Tally(
      'redis-client-kill',
      'CLIENT KILL TYPE normal, then TYPE pubsub, of every connection (Redis keeps its data)',
    );
    let killed = 0;
    await runScenario(
      faults.fc,
      tally,
      profile,
      {
        inject: async () => {
          killed += await redis.clientKill('normal');
        },
        during: async () => {
          await new Promise((r) => setTimeout(r, profile.outageMs / 2));
          killed += await redis.clientKill('pubsub');
        },
        heal: async () => undefined,
      },
      { redisUrl: redis.url },
    );
    tally.note(`connections killed: ${killed}`);
    expectNoHarm(tally);
  });
});

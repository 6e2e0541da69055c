/**
 * One PUBLISH alone in its turn of the event loop, awaited (what a tool call and its reply each
 * send on the bus): through ioredis's auto-pipeline, as the engines' shared connection sends
 * every command (`enableAutoPipelining`), against `sendNow` (written at once when nothing is
 * queued), on the same connection in the same run, alternated by round. Reports the client
 * process's CPU and the wall time per publish, and their ratio.
 *
 *   node --import tsx bench/redis-publish.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), PUBLISHES (per round and way, default
 * 20000), ROUNDS (default 5; the first pair is a warm-up and is not counted).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { closeRedis, createRedis, sendNow } from '../packages/redis/src/index.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const publishes = Number(process.env.PUBLISHES ?? 20_000);
const rounds = Number(process.env.ROUNDS ?? 5);

const redis = createRedis(url, {
  name: 'bench-redis-publish',
  redisOptions: { enableAutoPipelining: true },
});
await redis.ping();
const channel = `bench-redis-publish:${process.pid}`;

/** CPU and wall µs per publish of one way. */
async function round(now: boolean): Promise<{ cpuUs: number; wallUs: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < publishes; i++) {
    // A bus reply's size and shape.
    const payload = `{"v":1,"k":"res","from":"bench","id":"${i.toString(36)}","body":{"jsonrpc":"2.0","id":"${i}","result":{"content":[{"type":"text","text":"ok ${i}"}]}}}`;
    await (now ? sendNow(redis, 'publish', [channel, payload]) : redis.publish(channel, payload));
  }
  const used = process.cpuUsage(cpu);
  return {
    cpuUs: (used.user + used.system) / publishes,
    wallUs: ((performance.now() - start) * 1000) / publishes,
  };
}

console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${publishes} publishes per round and way`,
);
const totals = { pipelined: { cpu: 0, wall: 0 }, now: { cpu: 0, wall: 0 } };
for (let r = 0; r < rounds; r++) {
  // Alternated: a drift of the machine hits both ways alike.
  const order = r % 2 === 0 ? [false, true] : [true, false];
  for (const now of order) {
    const result = await round(now);
    console.log(
      `round ${r}${r === 0 ? ' (warm-up)' : ''}: ${now ? 'sendNow  ' : 'pipelined'} ${result.cpuUs.toFixed(1)} µs CPU, ${result.wallUs.toFixed(1)} µs wall`,
    );
    if (r === 0) continue;
    const total = now ? totals.now : totals.pipelined;
    total.cpu += result.cpuUs;
    total.wall += result.wallUs;
  }
}
const { pipelined, now } = totals;
console.log(
  `sendNow ÷ auto-pipelined: CPU ${(now.cpu / pipelined.cpu).toFixed(2)}×, wall ${(now.wall / pipelined.wall).toFixed(2)}× (means of ${rounds - 1} rounds each)`,
);
await closeRedis(redis);

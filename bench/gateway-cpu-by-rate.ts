/**
 * CPU per tool call of the split path at several call rates, idle included: gateway processes
 * as `bench/peers/gateway-tool-call.ts` starts them (`bench/support/split-gateway.ts`), the
 * route-cached caller in this process, the node fleet in its own. Shows how much of a gateway's
 * cost is per wake-up rather than per call: at low rates each call wakes it alone.
 *
 *   node --import tsx bench/gateway-cpu-by-rate.ts
 *
 * Env: RATES (calls/s, 0 = idle, default 0,100,333,1000), SECONDS (per rate, default 10), GATEWAYS
 * (default 1), NODES (users with one node each, default 10), REDIS_URL, DATABASE_URL.
 */
import { cpus, loadavg } from 'node:os';
import { startFleet } from './support/node-fleet.js';
import { openLoop } from './support/open-loop.js';
import { cpuMs, sleep, stopChild } from './support/processes.js';
import { startSplitGateway } from './support/split-gateway.js';

const rates = (process.env.RATES ?? '0,100,333,1000').split(',').map(Number);
const seconds = Number(process.env.SECONDS ?? 10);
const users = Array.from({ length: Number(process.env.NODES ?? 10) }, (_, i) => `bench-u${i}`);

const split = await startSplitGateway({
  redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  defaultTimeoutMs: 10_000,
  gateways: Number(process.env.GATEWAYS ?? 1),
});
const fleet = await startFleet(await split.targets(users));
await sleep(3_000); // past the start-up collection and the first presence writes
console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${split.gateways.length} gateway(s), ${users.length} nodes, ${seconds} s per rate`,
);
console.log('| rate (calls/s) | gateways (ms CPU/s) | caller | fleet | per call, all three (ms) |');
console.log('|---:|---|---:|---:|---:|');
const processes = () => [...split.gateways.map((g) => g.child.pid!), process.pid, fleet.pid!];
let offset = 0;
for (const rate of rates) {
  const before = processes().map((pid) => cpuMs(pid) ?? 0);
  const start = Date.now();
  if (rate === 0) await sleep(seconds * 1000);
  else {
    await openLoop(
      async (i) => {
        await split.caller.callTool({
          userId: users[i % users.length]!,
          nodeType: 'desktop',
          toolName: 'echo',
          arguments: { i },
          timeoutMs: 10_000,
        });
      },
      rate,
      seconds,
      offset,
    );
    offset += rate * seconds;
  }
  const elapsed = (Date.now() - start) / 1000;
  const perSecond = processes().map((pid, i) => ((cpuMs(pid) ?? 0) - before[i]!) / elapsed);
  const gateways = perSecond.slice(0, split.gateways.length);
  const [caller, nodes] = perSecond.slice(split.gateways.length);
  const all = perSecond.reduce((a, b) => a + b, 0);
  console.log(
    `| ${rate} | ${gateways.map((g) => g.toFixed(0)).join(', ')} | ${caller!.toFixed(0)} | ${nodes!.toFixed(0)} | ${rate ? (all / rate).toFixed(3) : '-'} |`,
  );
}
await stopChild(fleet);
await split.close();
process.exit(0);

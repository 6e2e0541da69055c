/**
 * What the per-user limits cost (docs/limits.md): three API processes of this build on the same
 * Redis and PostgreSQL, one with every limit off, one with every limit on (set high enough that
 * nothing is refused) and a second one with them off (the noise floor), measured in the same
 * run, rounds alternating their order. Per route:
 *
 * - the API process's CPU time per request (from /proc, user + system), CONCURRENCY requests in
 *   flight on keep-alive connections, pooled over the rounds;
 * - Redis commands and round trips per request, one request at a time (each process reaches
 *   Redis through its own counting proxy, bench/support/redis-counter.ts; background traffic
 *   such as lease renewals is in both counts alike).
 *
 *   pnpm build && node --import tsx bench/limits.ts
 *
 * Env: REQUESTS (default 1500 per route and round; invoke a third), ROUNDS (default 3),
 * CONCURRENCY (default 8), REDIS_URL, DATABASE_URL (the test services by default).
 */
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { resolveKeys, signAccessToken } from '../packages/auth/src/index.js';
import { startScriptedModel, testRedisUrl, textReply } from '../packages/testing/src/index.js';
import { keyFiles } from '../tests/helpers.js';
import { cpuMs } from './support/processes.js';
import { startCountedApi } from './support/counted-api.js';
import { redisServer } from './support/redis.js';

const REQUESTS = Number(process.env.REQUESTS ?? 1500);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
const REDIS_URL = testRedisUrl();
const MODEL = 'bench-limits';

const RATE_CLASSES = [
  'INVOKE',
  'DECISIONS',
  'KNOWLEDGE_UPLOAD',
  'KNOWLEDGE_SEARCH',
  'MCP_VALIDATE',
  'WRITES',
  'NODE_TOOL_CALLS',
  'REFRESH',
  'WEBHOOK',
];
const rates = (value: string) =>
  Object.fromEntries(RATE_CLASSES.map((c) => [`RATE_LIMIT_${c}_PER_MINUTE`, value]));
const OFF = {
  ...rates('0'),
  MAX_CONCURRENT_RUNS_PER_USER: '0',
  MAX_OPEN_STREAMS_PER_USER: '0',
  TOKEN_BUDGET_PER_USER_PER_DAY: '0',
};
/** `off-again`: a second process with the limits off, the noise floor of the ratios. */
const SETTINGS: Record<string, Record<string, string>> = {
  off: OFF,
  on: {
    ...rates('100000'),
    MAX_CONCURRENT_RUNS_PER_USER: '1000',
    MAX_OPEN_STREAMS_PER_USER: '1000',
    TOKEN_BUDGET_PER_USER_PER_DAY: '1000000000000',
  },
  'off-again': OFF,
};

const keys = keyFiles();
const model = await startScriptedModel();
const pair = await resolveKeys({ publicKeyPem: keys.publicKey, privateKeyPem: keys.privateKey });
const token = (await signAccessToken(pair, 'bench')).accessToken;

interface Route {
  readonly name: string;
  readonly requests: number;
  call(send: Send): Promise<void>;
}
type Send = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; text: string }>;

const routes: Route[] = [
  {
    // No limit of its own: the noise floor.
    name: 'GET /api/auth/whoami',
    requests: REQUESTS,
    call: async (send) => void (await send('GET', '/api/auth/whoami')),
  },
  {
    // The `writes` class; an id that does not exist (404 after the limit and one query).
    name: 'DELETE /api/memories/:id',
    requests: REQUESTS,
    call: async (send) => {
      const { status } = await send('DELETE', '/api/memories/00000000-0000-4000-8000-000000000000');
      if (status !== 404 && status !== 204) throw new Error(`memories: ${status}`);
    },
  },
  {
    // The `invoke` class, the token budget, a run slot and a stream slot; one model request.
    name: 'POST /api/agent/invoke (SSE)',
    requests: Math.max(1, Math.floor(REQUESTS / 3)),
    call: async (send) => {
      model.script(MODEL, [textReply('A short streamed answer.', 3)]);
      const { text } = await send('POST', '/api/agent/invoke', {
        message: 'Hi',
        sandbox_mode: 'none',
        llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-bench', modelName: MODEL },
      });
      if (!text.includes('"type":"done"')) throw new Error(`the run did not finish: ${text}`);
    },
  },
];

async function startSetting(name: string) {
  const { service, counter, stop } = await startCountedApi(
    `bench-limits-${name}`,
    keys,
    SETTINGS[name]!,
  );
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const send: Send = (method, path, body) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          host: '127.0.0.1',
          port: service.port,
          method,
          path,
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            ...(payload ? { 'content-length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            const status = res.statusCode ?? 500;
            if (status === 429 || status >= 500) reject(new Error(`${path}: ${status} ${text}`));
            else resolve({ status, text });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return {
    name,
    send,
    counter,
    cpu: () => cpuMs(service.child.pid!) ?? NaN,
    async stop() {
      agent.destroy();
      await stop();
    },
  };
}
type Running = Awaited<ReturnType<typeof startSetting>>;

async function cpuPerRequest(setting: Running, route: Route) {
  let next = 0;
  const before = setting.cpu();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < route.requests) await route.call(setting.send);
    }),
  );
  return { cpuMs: setting.cpu() - before, n: route.requests };
}

async function redisPerRequest(setting: Running, route: Route, n: number) {
  const before = setting.counter.counts();
  for (let i = 0; i < n; i++) await route.call(setting.send);
  // Let what a request started after its answer (a slot release, a run log append) reach Redis.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const after = setting.counter.counts();
  return {
    commands: (after.commands - before.commands) / n,
    roundTrips: (after.roundTrips - before.roundTrips) / n,
  };
}

const server = await redisServer(REDIS_URL);
console.log(
  `# limits: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `redis ${server.version}, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${REQUESTS} requests`,
);
const running: Running[] = [];
for (const name of Object.keys(SETTINGS)) running.push(await startSetting(name));
// Warm-up: JIT, pools, prepared statements.
for (const setting of running) {
  for (const route of routes) {
    await cpuPerRequest(setting, { ...route, requests: Math.ceil(route.requests / 5) });
  }
}
const cpu = new Map<string, { cpuMs: number; n: number }>();
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? running : [...running].reverse();
  for (const route of routes) {
    for (const setting of order) {
      const sample = await cpuPerRequest(setting, route);
      const key = `${setting.name}\u0000${route.name}`;
      const sum = cpu.get(key) ?? { cpuMs: 0, n: 0 };
      cpu.set(key, { cpuMs: sum.cpuMs + sample.cpuMs, n: sum.n + sample.n });
    }
  }
}
for (const route of routes) {
  const redis = new Map<string, { commands: number; roundTrips: number }>();
  for (const setting of running) redis.set(setting.name, await redisPerRequest(setting, route, 50));
  const perRequest = (name: string) => {
    const sum = cpu.get(`${name}\u0000${route.name}`)!;
    return sum.cpuMs / sum.n;
  };
  const off = perRequest('off');
  const on = perRequest('on');
  const again = perRequest('off-again');
  const offRedis = redis.get('off')!;
  const onRedis = redis.get('on')!;
  console.log(
    JSON.stringify({
      route: route.name,
      cpuMsPerRequestOff: Number(off.toFixed(4)),
      cpuMsPerRequestOn: Number(on.toFixed(4)),
      cpuRatio: Number((on / off).toFixed(3)),
      cpuMsPerRequestOffAgain: Number(again.toFixed(4)),
      noiseRatio: Number((again / off).toFixed(3)),
      redisCommandsOff: Number(offRedis.commands.toFixed(2)),
      redisCommandsOn: Number(onRedis.commands.toFixed(2)),
      redisRoundTripsOff: Number(offRedis.roundTrips.toFixed(2)),
      redisRoundTripsOn: Number(onRedis.roundTrips.toFixed(2)),
      roundTripsAdded: Number((onRedis.roundTrips - offRedis.roundTrips).toFixed(2)),
    }),
  );
}
for (const setting of running) await setting.stop();
await model.close();

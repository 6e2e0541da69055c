/**
 * The CPU one `GET /api/auth/whoami` costs a single service process, measured alone: one
 * process of the built all-in-one (embedded engines) is started, then PHASES phases of
 * REQUESTS requests each, CONCURRENCY in flight on keep-alive connections, and the process's
 * CPU (user + system, from /proc) per request is printed for each phase; the first phase is
 * the warm-up. Run it once per setting, one after the other, several times: with one process
 * and no other build beside it the figure moves by a few µs between runs, where
 * bench/http-stack.ts's interleaved builds move by ±10 % (it is what told apart the pieces of
 * the tracing floor, docs/BENCHMARKS.md "Metrics and traces on vs off", run I).
 *
 *   node --import tsx bench/http-one-process.ts
 *   SERVICE_ENV='OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318&OTEL_TRACES_SAMPLER=parentbased_traceidratio&OTEL_TRACES_SAMPLER_ARG=0' \
 *     node --import tsx bench/http-one-process.ts
 *
 * Env: ENTRY (default apps/all-in-one/dist/main.js), SERVICE_ENV (the service's environment
 * as a query string), REQUESTS (default 20,000), PHASES (default 3), CONCURRENCY (default 8).
 */
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { resolveKeys, signAccessToken } from '../packages/auth/src/index.js';
import { startServiceProcess } from '../packages/testing/src/index.js';
import { keyFiles, tempDir } from '../tests/helpers.js';
import { cpuMs as processCpuMs } from './support/processes.js';

const REQUESTS = Number(process.env.REQUESTS ?? 20_000);
const PHASES = Number(process.env.PHASES ?? 3);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);

const keys = keyFiles();
const pair = await resolveKeys({ publicKeyPem: keys.publicKey, privateKeyPem: keys.privateKey });
const token = (await signAccessToken(pair, 'bench')).accessToken;
const service = await startServiceProcess({
  entry: process.env.ENTRY ?? 'apps/all-in-one/dist/main.js',
  env: {
    DATA_DIR: tempDir('bench-one-process'),
    JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
    JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
    ...Object.fromEntries(new URLSearchParams(process.env.SERVICE_ENV ?? '')),
  },
});
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

const whoami = () =>
  new Promise<void>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: service.port,
        path: '/api/auth/whoami',
        agent,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });

/** CPU ms the service process used so far. */
const cpuMs = () => processCpuMs(service.child.pid!)!;

console.log(
  `# http-one-process: load ${loadavg()[0]!.toFixed(2)}, node ${process.version}, ` +
    `${PHASES} phases × ${REQUESTS} requests, concurrency ${CONCURRENCY}, env ${process.env.SERVICE_ENV ?? '(none)'}`,
);
for (let phase = 0; phase < PHASES; phase++) {
  let sent = 0;
  const before = cpuMs();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (sent++ < REQUESTS) await whoami();
    }),
  );
  const usPerRequest = ((cpuMs() - before) * 1000) / REQUESTS;
  console.log(
    JSON.stringify({
      phase,
      warmUp: phase === 0,
      cpuUsPerRequest: Number(usPerRequest.toFixed(1)),
    }),
  );
}
agent.destroy();
await service.stop('SIGTERM');

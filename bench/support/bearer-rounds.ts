/**
 * What the HTTP authentication benchmarks (`http-auth.ts`, `http-auth-provider.ts`) share: their
 * settings and own tokens, a keep-alive client sending `GET /me` with a bearer token, and rounds of requests timed in wall
 * seconds and process CPU, alternating the order of the variants from round to round.
 */
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { signAccessToken, throwawayKeys } from '../../packages/auth/src/index.js';

/**
 * The benchmarks' settings from the environment (REQUESTS per variant and round, default 4000;
 * ROUNDS, 3; CONCURRENCY requests in flight, 16; USERS, 50), a throwaway signing key pair, and
 * an access token of it for each of the USERS users (`u0`, `u1`, ...).
 */
export async function benchSetup(): Promise<{
  REQUESTS: number;
  ROUNDS: number;
  CONCURRENCY: number;
  USERS: number;
  keys: Awaited<ReturnType<typeof throwawayKeys>>;
  tokens: string[];
}> {
  const USERS = Number(process.env.USERS ?? 50);
  const keys = await throwawayKeys();
  const tokens = await Promise.all(
    Array.from(
      { length: USERS },
      async (_, i) => (await signAccessToken(keys, `u${i}`)).accessToken,
    ),
  );
  return {
    REQUESTS: Number(process.env.REQUESTS ?? 4000),
    ROUNDS: Number(process.env.ROUNDS ?? 3),
    CONCURRENCY: Number(process.env.CONCURRENCY ?? 16),
    USERS,
    keys,
    tokens,
  };
}

/** Wall time and CPU time (user + system, this process) of one round, or their sums. */
export interface RoundTotals {
  seconds: number;
  cpuMicros: number;
}

/** A keep-alive client with `concurrency` sockets: `get` answers the response's status. */
export function bearerClient(concurrency: number): {
  get(port: number, token: string): Promise<number>;
  close(): void;
} {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  return {
    get: (port, token) =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/me',
            agent,
            headers: { authorization: `Bearer ${token}` },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end();
      }),
    close: () => agent.destroy(),
  };
}

/**
 * Sends request 0 to `requests - 1` with `send`, `concurrency` in flight, and measures the
 * round. `send` throws when the answer is not the expected one.
 */
export async function timedRound(
  requests: number,
  concurrency: number,
  send: (i: number) => Promise<void>,
): Promise<RoundTotals> {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests) await send(next++);
    }),
  );
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - started) / 1000, cpuMicros: used.user + used.system };
}

/**
 * Runs `rounds` rounds of every variant, in the listed order on even rounds and reversed on odd
 * ones, and sums each variant's rounds (keyed by name). `loads` are the 1-minute load averages
 * before the first round and after each.
 */
export async function alternatingRounds<V extends { readonly name: string }>(
  variants: readonly V[],
  rounds: number,
  round: (variant: V) => Promise<RoundTotals>,
): Promise<{ results: Map<string, RoundTotals>; loads: number[] }> {
  const results = new Map(variants.map((v) => [v.name, { seconds: 0, cpuMicros: 0 }]));
  const loads = [loadavg()[0]!];
  for (let r = 0; r < rounds; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      const { seconds, cpuMicros } = await round(v);
      const total = results.get(v.name)!;
      total.seconds += seconds;
      total.cpuMicros += cpuMicros;
    }
    loads.push(loadavg()[0]!);
  }
  return { results, loads };
}

/**
 * Prints `results` as a Markdown table: requests/s and CPU µs per request of each variant
 * (`requests` each), and their ratio to the first variant's (of requests/s only with
 * `throughputRatio`).
 */
export function printRoundsTable(
  variants: readonly { readonly name: string }[],
  results: Map<string, RoundTotals>,
  requests: number,
  throughputRatio: boolean,
): void {
  const ratioHead = throughputRatio ? ' ÷ baseline (requests/s) |' : '';
  console.log(`| variant | requests/s | CPU µs per request |${ratioHead} ÷ baseline (CPU) |`);
  console.log(`| --- | ---: | ---: |${throughputRatio ? ' ---: |' : ''} ---: |`);
  const baseline = results.get(variants[0]!.name)!;
  for (const v of variants) {
    const t = results.get(v.name)!;
    const ratio = throughputRatio ? ` ${(baseline.seconds / t.seconds).toFixed(2)}× |` : '';
    console.log(
      `| ${v.name} | ${(requests / t.seconds).toFixed(0)} | ${(t.cpuMicros / requests).toFixed(0)} |` +
        `${ratio} ${(t.cpuMicros / baseline.cpuMicros).toFixed(2)}× |`,
    );
  }
}

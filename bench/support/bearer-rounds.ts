/**
 * What the HTTP authentication benchmarks (`http-auth.ts`, `http-auth-provider.ts`) share: a
 * keep-alive client sending `GET /me` with a bearer token, and rounds of requests timed in wall
 * seconds and process CPU, alternating the order of the variants from round to round.
 */
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';

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

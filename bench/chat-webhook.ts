/**
 * Chat-platform webhook acknowledgement latency: a real split-role API process on Redis and
 * PostgreSQL receives encrypted, signed `im.message.receive_v1` events open-loop at a steady
 * rate (unique event ids plus a share of exact re-deliveries), and answers after verification,
 * cross-replica dedup (Redis `SET NX`) and the BullMQ enqueue. Baseline in the same run, same
 * process, same request shape and rate: `POST /channels/unknown/webhook`, which the server
 * routes, reads and refuses (404) before any of that work.
 *
 *   pnpm exec tsc -b tsconfig.build.json   # the bench starts apps/api/dist/main.js
 *   node --import tsx bench/chat-webhook.ts
 *
 * Env: REDIS_URL (default redis://127.0.0.1:6379), DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/test), RATE (requests/s, default 500), SECONDS (measured
 * seconds per route, default 20), ROUNDS (alternating phases the seconds are split into,
 * default 4), WARMUP_SECONDS (default 3), DUPLICATES (share of re-deliveries, default 0.1),
 * SOCKETS (keep-alive connections, default 64), LOG_LEVEL of the server (default info).
 *
 * Latency is measured from each request's scheduled send time, so a client or server that
 * falls behind shows up in the numbers (no coordinated omission). No worker runs: queued jobs
 * stay in BullMQ and are deleted with the run's Redis keys.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';

process.env.REDIS_URL ??= 'redis://127.0.0.1:6379';
process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/test';
const { encryptEvent, eventSignature } = await import('../packages/lark/src/index.js');
const { createTestSchema, startServiceProcess, uniquePrefix } =
  await import('../packages/testing/src/index.js');

const rate = Number(process.env.RATE ?? 500);
const seconds = Number(process.env.SECONDS ?? 20);
const rounds = Number(process.env.ROUNDS ?? 4);
const warmUpSeconds = Number(process.env.WARMUP_SECONDS ?? 3);
const duplicateShare = Number(process.env.DUPLICATES ?? 0.1);
const sockets = Number(process.env.SOCKETS ?? 64);
const ENCRYPT_KEY = 'bench-encrypt-key';
const TOKEN = 'bench-verification-token';

interface Wire {
  body: string;
  headers: Record<string, string>;
}
interface Result {
  latencies: number[];
  statuses: Map<number, number>;
  errors: number;
  sent: number;
  elapsedMs: number;
}

let seq = 0;
const run = Math.random().toString(36).slice(2, 8);
/** Encrypted + signed like the platform sends it; one timestamp (valid for 300 s) for all. */
function messageWire(eventId: string, timestamp: string): Wire {
  const event = {
    schema: '2.0',
    header: {
      event_id: eventId,
      event_type: 'im.message.receive_v1',
      token: TOKEN,
      create_time: String(Date.now()),
      app_id: 'cli_bench',
    },
    event: {
      sender: { sender_id: { open_id: 'ou_bench' }, sender_type: 'user' },
      message: {
        message_id: `om_${eventId}`,
        chat_id: `oc_${eventId.length % 50}`,
        chat_type: 'p2p',
        message_type: 'text',
        content: JSON.stringify({ text: 'What is on my calendar today?' }),
      },
    },
  };
  const body = JSON.stringify({ encrypt: encryptEvent(ENCRYPT_KEY, JSON.stringify(event)) });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-lark-request-timestamp': timestamp,
      'x-lark-request-nonce': `n-${eventId}`,
      'x-lark-signature': eventSignature(timestamp, `n-${eventId}`, ENCRYPT_KEY, body),
    },
  };
}

/** `count` requests: unique events, with `duplicateShare` of them re-sending an earlier one. */
function makeWires(count: number): Wire[] {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const wires: Wire[] = [];
  for (let i = 0; i < count; i++) {
    const earlier = wires[i - 1 - (i % 7)];
    if (earlier && Math.random() < duplicateShare) wires.push(earlier);
    else wires.push(messageWire(`ev-${run}-${++seq}`, timestamp));
  }
  return wires;
}

const agent = new Agent({ keepAlive: true, maxSockets: sockets });
function send(url: URL, wire: Wire): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: wire.headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(wire.body);
  });
}

/** Sends `wires` open-loop at `rate`: request i is due at start + i / rate, answered or not. */
async function openLoop(url: URL, wires: Wire[]): Promise<Result> {
  const result: Result = { latencies: [], statuses: new Map(), errors: 0, sent: 0, elapsedMs: 0 };
  const start = performance.now() + 5;
  const interval = 1000 / rate;
  const inflight: Promise<void>[] = [];
  let next = 0;
  while (next < wires.length) {
    const now = performance.now();
    while (next < wires.length && start + next * interval <= now) {
      const due = start + next * interval;
      const wire = wires[next++]!;
      result.sent += 1;
      inflight.push(
        send(url, wire).then(
          (status) => {
            result.latencies.push(performance.now() - due);
            result.statuses.set(status, (result.statuses.get(status) ?? 0) + 1);
          },
          () => {
            result.errors += 1;
          },
        ),
      );
    }
    const wait = start + next * interval - performance.now();
    await new Promise((r) => (wait > 1 ? setTimeout(r, Math.floor(wait)) : setImmediate(r)));
  }
  await Promise.all(inflight);
  result.elapsedMs = performance.now() - start;
  return result;
}

function merge(into: Result, from: Result): void {
  into.latencies.push(...from.latencies);
  for (const [status, n] of from.statuses)
    into.statuses.set(status, (into.statuses.get(status) ?? 0) + n);
  into.errors += from.errors;
  into.sent += from.sent;
  into.elapsedMs += from.elapsedMs;
}

const keyDir = mkdtempSync(join(tmpdir(), 'bench-webhook-'));
const pair = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
writeFileSync(join(keyDir, 'public.pem'), pair.publicKey);
writeFileSync(join(keyDir, 'private.pem'), pair.privateKey, { mode: 0o600 });
const prefix = uniquePrefix('bench-webhook');
const schema = await createTestSchema('bench_webhook');
const redis = new Redis(process.env.REDIS_URL);
const api = await startServiceProcess({
  entry: 'apps/api/dist/main.js',
  env: {
    REDIS_URL: process.env.REDIS_URL,
    DATABASE_URL: process.env.DATABASE_URL,
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: prefix,
    JWT_PUBLIC_KEY_FILE: join(keyDir, 'public.pem'),
    JWT_PRIVATE_KEY_FILE: join(keyDir, 'private.pem'),
    LARK_ENCRYPT_KEY: ENCRYPT_KEY,
    LARK_VERIFICATION_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    INSTANCE_ID: 'bench-api',
  },
});

try {
  const routes = {
    baseline: new URL('/channels/unknown/webhook', api.url),
    webhook: new URL('/channels/feishu/webhook', api.url),
  };
  const perPhase = Math.round((rate * seconds) / rounds);
  // Warm-up: both routes, discarded (JIT, connection pool, Redis and BullMQ scripts loaded).
  const warm = makeWires(Math.round(rate * warmUpSeconds));
  await openLoop(routes.webhook, warm);
  await openLoop(routes.baseline, warm);

  const results = {
    baseline: { latencies: [], statuses: new Map(), errors: 0, sent: 0, elapsedMs: 0 } as Result,
    webhook: { latencies: [], statuses: new Map(), errors: 0, sent: 0, elapsedMs: 0 } as Result,
  };
  for (let r = 0; r < rounds; r++) {
    const order =
      r % 2 === 0 ? (['baseline', 'webhook'] as const) : (['webhook', 'baseline'] as const);
    for (const name of order)
      merge(results[name], await openLoop(routes[name], makeWires(perPhase)));
  }
  const queued = await redis
    .zcard(`${prefix}bull:chat-messages:delayed`)
    .then(async (delayed) => delayed + (await redis.llen(`${prefix}bull:chat-messages:wait`)));

  const pct = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  const base = [...results.baseline.latencies].sort((a, b) => a - b);
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}, Node ${process.version}; ${rate} req/s open-loop, ${seconds} s per route in ` +
      `${rounds} alternating phases after ${warmUpSeconds} s warm-up; ${Math.round(
        duplicateShare * 100,
      )}% re-deliveries; ${sockets} keep-alive sockets; server LOG_LEVEL ` +
      `${process.env.LOG_LEVEL ?? 'info'}\n`,
  );
  console.log(
    '| route | p50 ms | p99 ms | max ms | achieved req/s | statuses | errors | ratio (p50 / p99) |\n' +
      '| --- | ---: | ---: | ---: | ---: | --- | ---: | --- |',
  );
  for (const name of ['baseline', 'webhook'] as const) {
    const res = results[name];
    const s = [...res.latencies].sort((a, b) => a - b);
    const ratio =
      name === 'baseline'
        ? 'baseline'
        : `${(pct(s, 50) / pct(base, 50)).toFixed(1)}× / ${(pct(s, 99) / pct(base, 99)).toFixed(1)}×`;
    const statuses = [...res.statuses].map(([k, v]) => `${k}: ${v}`).join(', ');
    console.log(
      `| ${name === 'baseline' ? 'POST /channels/unknown/webhook → 404 (baseline)' : 'POST /channels/feishu/webhook → 200'} | ` +
        `${pct(s, 50).toFixed(1)} | ${pct(s, 99).toFixed(1)} | ${s[s.length - 1]?.toFixed(1)} | ` +
        `${((res.sent * 1000) / res.elapsedMs).toFixed(0)} | ${statuses} | ${res.errors} | ${ratio} |`,
    );
  }
  console.log(`\nchat-message jobs queued in BullMQ: ${queued}`);
} finally {
  agent.destroy();
  await api.stop('SIGTERM');
  for (let cursor = '0'; ;) {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    if ((cursor = next) === '0') break;
  }
  redis.disconnect();
  await schema.drop();
  rmSync(keyDir, { recursive: true, force: true });
}

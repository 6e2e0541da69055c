/**
 * The deployment under test: 2 api, 2 gateway and 1 worker replicas (or more workers) (tests/cluster.ts) on the
 * Redis and PostgreSQL the test chooses (its own Redis, or a proxy in front of either), plus the
 * scripted model, the fake chat platform and the nodes.
 */
import { afterAll, beforeAll } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  REPO_ROOT,
  startFakeLark,
  startScriptedModel,
  type FakeLark,
  type ScriptedModel,
} from '@agent-backend/testing';
import { startCluster, type Cluster } from '../cluster.js';
import { larkEnv, LARK, slowText, startFleet, type Fleet } from './traffic.js';
import type { Tally } from './tally.js';

export const INTERNAL_SECRET = 'faults-internal-secret';
/** The worker's default model: chat replies and scheduled runs. */
export const WORKER_MODEL = 'faults-worker';

export interface FaultCluster {
  readonly cluster: Cluster;
  readonly model: ScriptedModel;
  readonly lark: FakeLark;
  readonly fleet: Fleet;
  /** The worker's model name (`DEFAULT_LLM_MODEL`). */
  readonly workerModel: string;
  /** Writes every replica's log lines to `artifacts/faults/logs/<name>/` (for a failed run). */
  dumpLogs(name: string): void;
  /** Every replica's `/readyz`: status and body. */
  readiness(): Promise<Array<{ role: string; status: number; body: unknown }>>;
  stop(): Promise<void>;
}

export async function startFaultCluster(options: {
  redisUrl?: string;
  databaseUrl?: string;
  users?: number;
  env?: Record<string, string>;
  /** The worker's model name; only {@link WORKER_MODEL} comes with answers scripted. */
  workerModel?: string;
  /** How many worker replicas. @default 1 */
  workers?: number;
}): Promise<FaultCluster> {
  const model = await startScriptedModel();
  const lark = await startFakeLark({ appId: LARK.appId, appSecret: LARK.secret });
  // Plenty of answers for the worker's runs (each request takes one), each streaming for a
  // second and a half, so runs are under way when a fault hits.
  model.script(
    WORKER_MODEL,
    Array.from({ length: 500 }, (_, i) => ({
      kind: 'stream' as const,
      pieces: slowText(`worker answer ${i}`, 1_500, 3),
    })),
  );
  const cluster = await startCluster({
    gateways: 2,
    apis: 2,
    workers: options.workers ?? 1,
    env: {
      ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
      ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
      ...larkEnv(lark, model, options.workerModel ?? WORKER_MODEL),
      INTERNAL_API_SECRET: INTERNAL_SECRET,
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
      // Fast liveness, so recovery is measured in seconds rather than the production minutes.
      GATEWAY_PING_INTERVAL_MS: '2000',
      GATEWAY_REPLICA_TTL_MS: '3000',
      JOBS_LOCK_MS: '3000',
      ...options.env,
    },
  });
  const users = Array.from({ length: options.users ?? 6 }, (_, i) => `node-user-${i}`);
  const fleet = await startFleet(cluster, users);
  return {
    cluster,
    model,
    lark,
    fleet,
    workerModel: options.workerModel ?? WORKER_MODEL,
    dumpLogs(name) {
      const dir = join(REPO_ROOT, 'artifacts', 'faults', 'logs', name);
      mkdirSync(dir, { recursive: true });
      for (const p of [...cluster.apis, ...cluster.gateways, ...cluster.workers]) {
        const id = p.stdout.map((l) => /"instance":"([^"]+)"/.exec(l)?.[1]).find(Boolean);
        writeFileSync(join(dir, `${id ?? p.port}.log`), [...p.stdout, ...p.stderr].join('\n'));
      }
    },
    async readiness() {
      const replicas = [
        ...cluster.apis.map((p) => ['api', p] as const),
        ...cluster.gateways.map((p) => ['gateway', p] as const),
        ...cluster.workers.map((p) => ['worker', p] as const),
      ];
      return Promise.all(
        replicas.map(async ([role, p]) => {
          const res = await fetch(`${p.url}/readyz`, { signal: AbortSignal.timeout(5_000) });
          return { role, status: res.status, body: (await res.json()) as unknown };
        }),
      );
    },
    async stop() {
      await fleet.close().catch(() => undefined);
      await cluster.stop();
      await model.close();
      await lark.close();
    },
  };
}

/** `HH:mm:ss` and `YYYY-MM-DD` in UTC, `seconds` from now (a `no-repeat` task's instant). */
export function dueIn(seconds: number) {
  const at = new Date(Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000);
  const iso = at.toISOString();
  return { scheduled_date: iso.slice(0, 10), scheduled_time: iso.slice(11, 19) };
}

export interface TaskState {
  status: string;
  runs: Array<{ status: string; attempts: number; output: string | null }>;
}

/** `POST /scheduled-task/sync` of an `auto` task due in `seconds`. */
export async function syncTask(
  cluster: Cluster,
  taskId: string,
  task: Record<string, unknown>,
  signal: AbortSignal = AbortSignal.timeout(10_000),
): Promise<Response> {
  return fetch(`${cluster.apis[0]!.url}/scheduled-task/sync`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-internal-secret': INTERNAL_SECRET },
    body: JSON.stringify({
      action: 'add',
      task_id: taskId,
      task: { id: taskId, user_id: 'task-user', title: taskId, prompt: `run ${taskId}`, ...task },
    }),
    signal,
  });
}

export async function readTask(cluster: Cluster, taskId: string): Promise<TaskState> {
  const res = await fetch(`${cluster.apis[0]!.url}/scheduled-task/${taskId}`, {
    headers: { 'x-internal-secret': INTERNAL_SECRET },
    signal: AbortSignal.timeout(5_000),
  });
  return (await res.json()) as TaskState;
}

/**
 * How many times the worker's model was asked to run `taskId` (each attempt of a run asks once):
 * the side effect of a scheduled run.
 */
export function taskExecutions(
  model: ScriptedModel,
  taskId: string,
  workerModel = WORKER_MODEL,
): number {
  return model
    .requests(workerModel)
    .filter((r) => JSON.stringify(r.body.messages ?? []).includes(`run ${taskId}`)).length;
}

/**
 * Counts one scheduled occurrence: succeeded once it has one `succeeded` run, failed with the
 * run's error, lost when it never ran within `deadlineMs`, doubled when the model ran it more
 * often than the run's attempts say (at-least-once is fine, unnoticed repeats are not).
 */
export async function countTask(
  tally: Tally,
  fc: FaultCluster,
  taskId: string,
  deadlineMs: number,
  kind = 'scheduled runs',
): Promise<void> {
  const counts = tally.counts(kind);
  counts.made++;
  const started = Date.now();
  let state: TaskState | undefined;
  do {
    state = await readTask(fc.cluster, taskId).catch(() => undefined);
    const run = state?.runs[0];
    if (run && (run.status === 'succeeded' || run.status === 'failed')) break;
    await new Promise((r) => setTimeout(r, 250));
  } while (Date.now() - started < deadlineMs);
  const runs = state?.runs ?? [];
  const run = runs[0];
  if (!run || (run.status !== 'succeeded' && run.status !== 'failed')) {
    counts.lost++;
    tally.note(`${taskId}: no finished run within ${deadlineMs} ms (${JSON.stringify(state)})`);
    return;
  }
  if (run.status === 'succeeded') tally.add(kind, { kind: 'succeeded' });
  else tally.add(kind, { kind: 'failed', code: 'run_failed' });
  const executions = taskExecutions(fc.model, taskId, fc.workerModel);
  if (runs.length > 1 || executions > run.attempts) {
    counts.doubled++;
    tally.note(
      `${taskId}: ${runs.length} runs, ${executions} executions, ${run.attempts} attempts`,
    );
  }
}

/** Counts one acknowledged chat message: one reply in the chat, none lost, none doubled. */
export async function countReplies(
  tally: Tally,
  fc: FaultCluster,
  messageIds: Array<string | undefined>,
  deadlineMs: number,
  kind = 'chat replies',
): Promise<void> {
  const counts = tally.counts(kind);
  const replies = (id: string) =>
    fc.lark.messages.filter((m) => m.kind === 'reply' && m.target === id).length;
  const acked = messageIds.filter((id): id is string => id !== undefined);
  counts.made += acked.length;
  const started = Date.now();
  while (Date.now() - started < deadlineMs && acked.some((id) => replies(id) === 0)) {
    await new Promise((r) => setTimeout(r, 250));
  }
  // Time for a duplicate to show up, if there were one.
  await new Promise((r) => setTimeout(r, 1_000));
  for (const id of acked) {
    const n = replies(id);
    if (n === 0) counts.lost++;
    else tally.add(kind, { kind: 'succeeded' });
    if (n > 1) counts.doubled++;
  }
}

/** Something a fault test starts in front of its cluster (its own Redis, a proxy). */
interface Closeable {
  close(): Promise<void>;
}

/**
 * The fault cluster of a `describe` block. In `beforeAll`, `prepare` starts what the file puts
 * in front of the cluster, registering each with `own`, and returns the cluster's options; in
 * `afterAll` the replicas' logs go to `artifacts/faults/logs/<name>/`, the cluster stops, and
 * what `prepare` owned closes, last started first. `fc` is the running cluster.
 */
export function useFaultCluster(
  name: string,
  prepare: (
    own: <T extends Closeable>(resource: T) => T,
  ) => Promise<Parameters<typeof startFaultCluster>[0]> = () => Promise.resolve({}),
): { readonly fc: FaultCluster } {
  const owned: Closeable[] = [];
  let started: FaultCluster | undefined;
  beforeAll(async () => {
    const options = await prepare((resource) => {
      owned.push(resource);
      return resource;
    });
    started = await startFaultCluster(options);
  });
  afterAll(async () => {
    started?.dumpLogs(name);
    await started?.stop();
    for (const resource of owned.splice(0).reverse()) await resource.close();
  });
  return {
    get fc() {
      if (!started) throw new Error(`the ${name} fault cluster did not start`);
      return started;
    },
  };
}

/** `url` with its host and port replaced by the proxy's (on loopback). */
export function viaProxy(url: string, proxy: { readonly port: number }): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.toString();
}

/** Whether every user of the fleet lists its node (`GET /node/devices`, online only). */
export async function everyNodeListed(fc: FaultCluster): Promise<boolean> {
  const { cluster, fleet } = fc;
  const listed = await Promise.all(
    fleet.users.map(async (userId, i) => {
      const api = cluster.apis[i % cluster.apis.length]!;
      const res = await fetch(`${api.url}/node/devices?user_id=${userId}&online_only=1`, {
        headers: { authorization: `Bearer ${await cluster.token(userId)}` },
        signal: AbortSignal.timeout(2_000),
      });
      if (res.status !== 200) return false;
      const body = (await res.json()) as { nodes: Array<{ node_id?: string }> };
      return body.nodes.length === 1;
    }),
  );
  return listed.every(Boolean);
}

import { randomUUID } from 'node:crypto';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { readSse, type AgentCluster, type SseClient } from './agent-helpers.js';

export const WORKER_ENTRY = 'apps/worker/dist/main.js';

/** A worker replica on a cluster's engines. */
export function startWorker(
  env: Readonly<Record<string, string>>,
  id: string,
): Promise<ServiceProcess> {
  return startServiceProcess({ entry: WORKER_ENTRY, env: { ...env, INSTANCE_ID: id } });
}

/** `POST /api/agent/invoke` with `background: true`: the 202 answer. */
export async function invokeBackground(
  baseUrl: string,
  token: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: { run_id: string; session_id: string } }> {
  const response = await fetch(`${baseUrl}/api/agent/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ sandbox_mode: 'none', ...body, background: true }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

/** `GET /api/agent/runs/:run_id/stream`, from `lastEventId` when given. */
export async function joinRun(
  baseUrl: string,
  token: string,
  runId: string,
  lastEventId?: string,
): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/agent/runs/${encodeURIComponent(runId)}/stream`, {
    headers: {
      authorization: `Bearer ${token}`,
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    },
    signal: controller.signal,
  });
  return readSse(response, controller);
}

/** Polls until `check` resolves truthy (the service's own progress, not a timing assertion). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `seq` of each event id (`<run_id>:<seq>`). */
export const seqs = (events: ReadonlyArray<{ id: string | undefined }>): number[] =>
  events.map((e) => Number(e.id!.slice(e.id!.lastIndexOf(':') + 1)));

/**
 * Makes PostgreSQL take `seconds` for each INSERT into `table` (the run's row by default) of
 * `userId`'s rows, or of the rows `when` (an SQL condition on `NEW`) holds for: a trigger on the
 * test's own rows, so a run streams while they are not stored yet. Resolves to the trigger's
 * removal (call it in a `finally`).
 */
export async function slowInserts(
  cluster: Pick<AgentCluster, 'sql'>,
  rows: { seconds: number; table?: string } & ({ userId: string } | { when: string }),
): Promise<() => Promise<void>> {
  const table = rows.table ?? 'agent_runs';
  const when = 'userId' in rows ? `NEW.user_id = '${rows.userId}'` : rows.when;
  const name = `slow_insert_${randomUUID()}`;
  await cluster.sql(
    `CREATE OR REPLACE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN PERFORM pg_sleep(TG_ARGV[0]::float8); RETURN NEW; END $$`,
  );
  await cluster.sql(
    `CREATE TRIGGER "${name}" BEFORE INSERT ON ${table} FOR EACH ROW
     WHEN (${when}) EXECUTE FUNCTION slow_insert('${rows.seconds}')`,
  );
  return async () => {
    await cluster.sql(`DROP TRIGGER "${name}" ON ${table}`);
  };
}

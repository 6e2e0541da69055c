import {
  AGENT_RUNS_QUEUE,
  deleteTurnRecords,
  parseRunState,
  sessionLeaseKey,
} from '@agent-backend/agent-runtime';
import { approvalKeys } from '@agent-backend/hitl';
import { KB_INGEST_QUEUE } from '@agent-backend/knowledge';
import { sandboxLeaseKey } from '@agent-backend/sandbox';
import { SCHEDULED_TASKS_QUEUE } from '@agent-backend/scheduler';
import type { Queryable } from '@agent-backend/store';
import type { ErasureSettings, UserDataDeps } from './deps.js';
import { ErasureRepository, type ErasureRecord, type RemovedCounts } from './erasures.js';

/** The defaults of {@link ErasureSettings}. */
export const ERASURE_DEFAULTS = {
  batchSize: 500,
  leaseMs: 30_000,
  forgetAfterMs: 61 * 60_000,
  revocationWaitMs: 2_500,
} as const satisfies Required<ErasureSettings>;

/** Runs `work` in a transaction and adds the counts it returns to the erasure's. */
type Counted = (work: (tx: Queryable) => Promise<RemovedCounts>) => Promise<RemovedCounts>;

type SandboxRow = { session_id: string; provider: string; sandbox_id: string };

/**
 * Erases everything `userId` owns, in an order that a crash at any point leaves resumable:
 * the erasure's row first; then what refuses the user's credentials (the access-token cutoff,
 * which also closes their sockets on every gateway, and their refresh tokens); then the user's
 * runs still going, stopped wherever they run (`stopRuns`); then each kind
 * of data, the Redis state and the sandboxes that only the store's rows lead to before those
 * rows (a run's log before the run, a task's schedule before the task). Every deletion commits
 * together with its count on the erasure's row, in batches of `batchSize`, so no transaction
 * holds many locks and a resumed erasure counts each row once. Running it again for a user
 * with nothing left removes nothing.
 */
export async function eraseUser(
  deps: UserDataDeps,
  settings: ErasureSettings,
  userId: string,
): Promise<ErasureRecord> {
  const { db } = deps;
  const batch = settings.batchSize ?? ERASURE_DEFAULTS.batchSize;
  const erasures = new ErasureRepository(
    db,
    deps.instanceId,
    settings.leaseMs ?? ERASURE_DEFAULTS.leaseMs,
  );
  const { erasureId } = await erasures.begin(userId);
  const counted: Counted = async (work) => {
    const counts = await db.transaction(async (tx) => {
      const made = await work(tx);
      await erasures.count(tx, erasureId, made);
      return made;
    });
    deps.logger.debug({ erasureId, counts }, 'erasure: batch removed');
    return counts;
  };
  /** Deletes the user's rows of `table` a batch at a time, counting them as `kind`. */
  const removeRows = async (kind: string, table: string, key: string) => {
    for (;;) {
      const counts = await counted(async (tx) => {
        const { rowCount } = await tx.query(
          `DELETE FROM ${table} WHERE user_id = $1 AND (${key}) IN
             (SELECT ${key} FROM ${table} WHERE user_id = $1 LIMIT $2)`,
          [userId, batch],
        );
        return { [kind]: rowCount };
      });
      if ((counts[kind] ?? 0) < batch) return;
    }
  };

  // Credentials first: nothing the user sends is accepted while the rest goes.
  await deps.revokeAccessTokens(userId);
  await removeRows('refresh_tokens', 'refresh_tokens', 'token_hash');
  const wait = settings.revocationWaitMs ?? ERASURE_DEFAULTS.revocationWaitMs;
  await new Promise((resolve) => setTimeout(resolve, wait));
  // Then the runs already going (none can start now): stopped and recorded as ended before
  // anything of theirs is read, so none writes after the rows it would write to are gone.
  const stopped = (await deps.stopRuns?.(userId)) ?? 0;
  if (stopped > 0) deps.logger.info({ erasureId, stopped }, 'erasure: runs stopped');

  await eraseScheduledTasks(deps, userId, counted);
  await counted(async () => ({
    queued_jobs: await deps.jobs.removeJobs(KB_INGEST_QUEUE, (data) => ownedBy(data, userId)),
  }));

  for (;;) {
    const { rows } = await db.query<{ session_id: string }>(
      `SELECT session_id FROM agent_sessions WHERE user_id = $1 ORDER BY session_id LIMIT $2`,
      [userId, batch],
    );
    if (rows.length === 0) break;
    await eraseSessions(
      deps,
      userId,
      rows.map((r) => r.session_id),
      counted,
    );
  }
  // Sandboxes whose session row went some other way.
  await eraseSessions(deps, userId, [], counted);

  await removeRows('memories', 'memories', 'memory_id');
  await removeRows('knowledge_chunks', 'knowledge_chunks', 'document_id, chunk_index');
  await removeRows('knowledge_documents', 'knowledge_documents', 'document_id');
  await removeRows('knowledge_bases', 'knowledge_bases', 'knowledge_base_id');
  await removeRows('skill_files', 'user_skill_files', 'name, path');
  await removeRows('skills', 'user_skills', 'name');
  // Their security history goes with their data; the erasure is recorded naming nobody.
  await removeRows('audit_events', 'audit_log', 'event_id');

  await counted(async () => ({
    nodes: await deps.presence.removeUser(userId),
    limit_counters: await deps.limits.forgetUser(userId),
  }));
  return erasures.finish(erasureId, settings.forgetAfterMs ?? ERASURE_DEFAULTS.forgetAfterMs);
}

/** Whether a job's data names the user (`user_id`, as the knowledge ingestion's does). */
function ownedBy(data: unknown, userId: string): boolean {
  return typeof data === 'object' && data !== null && 'user_id' in data && data.user_id === userId;
}

/** The user's scheduled tasks: schedules and queued jobs first, then the rows. */
async function eraseScheduledTasks(
  deps: UserDataDeps,
  userId: string,
  counted: Counted,
): Promise<void> {
  const { rows } = await deps.db.query<{ task_id: string }>(
    `SELECT task_id FROM scheduled_tasks WHERE user_id = $1
     UNION SELECT task_id FROM scheduled_task_runs WHERE user_id = $1`,
    [userId],
  );
  const taskIds = new Set(rows.map((r) => r.task_id));
  if (taskIds.size === 0) return;
  let schedules = 0;
  for (const taskId of taskIds) {
    if (await deps.jobs.removeSchedule(SCHEDULED_TASKS_QUEUE, taskId)) schedules += 1;
  }
  const queued = await deps.jobs.removeJobs(SCHEDULED_TASKS_QUEUE, (data) => {
    const taskId = (data as { taskId?: unknown } | null)?.taskId;
    return typeof taskId === 'string' && taskIds.has(taskId);
  });
  await counted(async (tx) => {
    const runs = await tx.query(`DELETE FROM scheduled_task_runs WHERE user_id = $1`, [userId]);
    const tasks = await tx.query(`DELETE FROM scheduled_tasks WHERE user_id = $1`, [userId]);
    return {
      schedules,
      queued_jobs: queued,
      scheduled_task_runs: runs.rowCount,
      scheduled_tasks: tasks.rowCount,
    };
  });
}

/**
 * One batch of sessions: their runs' logs, jobs, turn records and approvals' records, their
 * leases and sandboxes, then their rows. With no
 * session ids, the user's sandboxes whose session is already gone.
 */
async function eraseSessions(
  deps: UserDataDeps,
  userId: string,
  sessionIds: readonly string[],
  counted: Counted,
): Promise<void> {
  const { db } = deps;
  const all = sessionIds.length === 0;
  const { rows: runs } = all
    ? { rows: [] }
    : await db.query<{ run_id: string; state: unknown }>(
        `SELECT run_id, state FROM agent_runs WHERE user_id = $1 AND session_id = ANY($2::text[])`,
        [userId, sessionIds],
      );
  const runIds = runs.map((r) => r.run_id);
  const runLogs = await deps.runLog.delete(runIds);
  // The runs' jobs (a queued background start, a suspended run's resumes and approval
  // timeouts) name them, waiting or kept after they ran.
  const own = new Set(runIds);
  const runJobs =
    own.size === 0
      ? 0
      : await deps.jobs.removeJobs(AGENT_RUNS_QUEUE, (data) => {
          const runId = (data as { run_id?: unknown } | null)?.run_id;
          return typeof runId === 'string' && own.has(runId);
        });
  const { rows: approvals } = all
    ? { rows: [] }
    : await db.query<{ request_id: string }>(
        `SELECT request_id FROM agent_approvals WHERE user_id = $1 AND session_id = ANY($2::text[])`,
        [userId, sessionIds],
      );
  // A serial turn's record names its tool calls with their arguments (TURN_RECORD_TTL_MS).
  let ephemeralKeys = await deleteTurnRecords(deps.ephemeral, runIds);
  // Decided approvals' records stay in the ephemeral store for a while (APPROVAL_RETAIN_MS); a
  // suspended run's held ones until their timeout.
  const held = runs.flatMap(({ state }) =>
    Object.values(parseRunState(state)?.pendingTurn?.approvals ?? {}).map((a) => a.request_id),
  );
  for (const requestId of new Set([...approvals.map((a) => a.request_id), ...held]))
    for (const key of approvalKeys(requestId))
      if (await deps.ephemeral.delete(key)) ephemeralKeys += 1;
  for (const sessionId of sessionIds) {
    if (await deps.ephemeral.delete(sessionLeaseKey(userId, sessionId))) ephemeralKeys += 1;
    if (await deps.ephemeral.delete(sandboxLeaseKey(userId, sessionId))) ephemeralKeys += 1;
  }
  const { rows: sandboxes } = await db.query<SandboxRow>(
    all
      ? `SELECT session_id, provider, sandbox_id FROM session_sandboxes WHERE user_id = $1`
      : `SELECT session_id, provider, sandbox_id FROM session_sandboxes
         WHERE user_id = $1 AND session_id = ANY($2::text[])`,
    all ? [userId] : [userId, sessionIds],
  );
  const providers = new Map(deps.sandboxProviders.map((p) => [p.name, p]));
  for (const sandbox of sandboxes) {
    const provider = providers.get(sandbox.provider);
    if (provider) {
      // Throws when the provider refuses: the erasure stays pending and is tried again.
      await provider.destroy(sandbox.sandbox_id);
    } else {
      deps.logger.warn(
        { provider: sandbox.provider, sandboxId: sandbox.sandbox_id },
        'erasure: a sandbox of a provider not configured here was forgotten, not destroyed',
      );
    }
  }
  await counted(async (tx): Promise<RemovedCounts> => {
    const sandboxRows = await tx.query(
      `DELETE FROM session_sandboxes WHERE user_id = $1 AND sandbox_id = ANY($2::text[])`,
      [userId, sandboxes.map((s) => s.sandbox_id)],
    );
    if (all) return { sandboxes: sandboxRows.rowCount };
    const params = [userId, sessionIds];
    const where = `WHERE user_id = $1 AND session_id = ANY($2::text[])`;
    const approvals = await tx.query(`DELETE FROM agent_approvals ${where}`, params);
    const messages = await tx.query(`DELETE FROM agent_messages ${where}`, params);
    const runRows = await tx.query(`DELETE FROM agent_runs ${where}`, params);
    const sessions = await tx.query(`DELETE FROM agent_sessions ${where}`, params);
    return {
      sessions: sessions.rowCount,
      messages: messages.rowCount,
      runs: runRows.rowCount,
      approvals: approvals.rowCount,
      run_logs: runLogs,
      queued_jobs: runJobs,
      ephemeral_keys: ephemeralKeys,
      sandboxes: sandboxRows.rowCount,
    };
  });
}

import { setTimeout as sleep } from 'node:timers/promises';
import {
  deleteSessions,
  deleteTurnRecords,
  sessionLeaseHolder,
} from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { SandboxProvider } from '@agent-backend/sandbox';
import { AuditLog, type Database } from '@agent-backend/store';

/** What the sweep deletes, as `retention_removed_total` labels them. */
export type RetentionKind =
  'sessions' | 'task_runs' | 'knowledge_documents' | 'memories' | 'audit_events';

/** Days each kind is kept (0: forever), and the rows one statement deletes at most. */
export interface RetentionSettings {
  readonly days: Readonly<Record<RetentionKind, number>>;
  readonly batchSize: number;
  /** Pause between two batches, so live statements get the database in between. @default 20 */
  readonly pauseMs?: number;
}

export interface RetentionDeps {
  readonly db: Database;
  readonly ephemeral: EphemeralStore;
  /**
   * The sandbox providers configured here: the sandbox of each deleted session is destroyed at
   * its provider, with its files. One not destroyed here (a provider that refused, or one not
   * configured) is told to `sandboxLeft` and left to the sandbox sweep, which destroys the
   * deployment's sandboxes no session records.
   */
  readonly sandboxProviders?: readonly SandboxProvider[];
  readonly sandboxLeft?: (sandbox: { provider: string; sandboxId: string }, why: string) => void;
  /** Told after each batch that deleted something (`sandboxes`: those destroyed). */
  readonly removed?: (kind: RetentionKind | 'sandboxes', count: number) => void;
  /** Stops the sweep between two batches (shutdown). */
  readonly signal?: AbortSignal;
}

const DAY_MS = 86_400_000;

/**
 * One retention sweep (docs/operations.md, "Retention"): for each kind with a retention, the
 * rows past it are deleted `batchSize` at a time, oldest first, each batch a statement of its
 * own, with a pause between batches. Rows a live statement holds are skipped, never waited for
 * (`SKIP LOCKED`). Sessions go through the session delete's cascade, their sandboxes destroyed
 * at their providers right after each batch; a session is kept when a
 * run of it is going (its lease is held or a run is `running`: a run waiting days for an
 * approval too) or when it was used after the sweep selected it (the delete re-checks its last
 * activity). Returns how many rows of each kind were deleted.
 */
export async function sweepRetention(
  deps: RetentionDeps,
  settings: RetentionSettings,
  now: Date = new Date(),
): Promise<Record<RetentionKind | 'sandboxes', number>> {
  const removed: Record<RetentionKind | 'sandboxes', number> = {
    sandboxes: 0,
    sessions: 0,
    task_runs: 0,
    knowledge_documents: 0,
    memories: 0,
    audit_events: 0,
  };
  const pauseMs = settings.pauseMs ?? 20;
  const { db, signal } = deps;
  const batch = settings.batchSize;
  const run = async (
    kind: RetentionKind,
    step: (cutoff: Date) => Promise<{ deleted: number; more: boolean }>,
  ) => {
    const days = settings.days[kind];
    if (days <= 0) return;
    const cutoff = new Date(now.getTime() - days * DAY_MS);
    for (;;) {
      if (signal?.aborted) return;
      const { deleted, more } = await step(cutoff);
      if (deleted > 0) {
        removed[kind] += deleted;
        deps.removed?.(kind, deleted);
      }
      if (!more) return;
      await sleep(pauseMs);
    }
  };
  const deleteBatch = (sql: string) => async (cutoff: Date) => {
    const { rowCount } = await db.query(sql, [cutoff, batch]);
    return { deleted: rowCount, more: rowCount >= batch };
  };

  let after: { updatedAt: Date; userId: string; sessionId: string } | undefined;
  await run('sessions', async (cutoff) => {
    const candidates = await idleSessions(db, cutoff, batch, after);
    const last = candidates.at(-1);
    if (last) after = last;
    const leased = await Promise.all(
      candidates.map((s) => sessionLeaseHolder(deps.ephemeral, s.userId, s.sessionId)),
    );
    const free = candidates.filter((_, i) => leased[i] === null);
    const { sessions: deleted, runIds, sandboxes } = await deleteSessions(db, free, cutoff);
    await deleteTurnRecords(deps.ephemeral, runIds);
    const destroyed = await destroySandboxes(deps, sandboxes);
    if (destroyed > 0) {
      removed.sandboxes += destroyed;
      deps.removed?.('sandboxes', destroyed);
    }
    return { deleted, more: candidates.length >= batch };
  });
  await run(
    'task_runs',
    deleteBatch(
      `DELETE FROM scheduled_task_runs WHERE (task_id, scheduled_at) IN (
         SELECT task_id, scheduled_at FROM scheduled_task_runs
          WHERE finished_at IS NOT NULL AND finished_at < $1
          ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
  );
  await run(
    'knowledge_documents',
    deleteBatch(
      `DELETE FROM knowledge_documents WHERE document_id IN (
         SELECT document_id FROM knowledge_documents
          WHERE updated_at < $1 AND status <> 'pending'
          ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
  );
  await run(
    'memories',
    deleteBatch(
      `DELETE FROM memories WHERE memory_id IN (
         SELECT memory_id FROM memories WHERE updated_at < $1
          ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
  );
  const audit = new AuditLog(db);
  await run('audit_events', async (cutoff) => {
    const deleted = await audit.purge(cutoff, batch);
    return { deleted, more: deleted >= batch };
  });
  return removed;
}

/** Destroys deleted sessions' sandboxes at their providers; returns how many it destroyed. */
async function destroySandboxes(
  deps: RetentionDeps,
  sandboxes: ReadonlyArray<{ provider: string; sandboxId: string }>,
): Promise<number> {
  const providers = new Map((deps.sandboxProviders ?? []).map((p) => [p.name, p]));
  let destroyed = 0;
  for (const sandbox of sandboxes) {
    const provider = providers.get(sandbox.provider);
    if (!provider) {
      deps.sandboxLeft?.(sandbox, 'its provider is not configured here');
      continue;
    }
    try {
      await provider.destroy(sandbox.sandboxId);
      destroyed += 1;
    } catch (error) {
      deps.sandboxLeft?.(sandbox, error instanceof Error ? error.message : String(error));
    }
  }
  return destroyed;
}

/**
 * Sessions idle since before `cutoff` with no run recorded as running, oldest activity first,
 * after the previous batch's last (a session kept in one batch is not selected again).
 */
async function idleSessions(
  db: Database,
  cutoff: Date,
  limit: number,
  after: { updatedAt: Date; userId: string; sessionId: string } | undefined,
) {
  const { rows } = await db.query<{ user_id: string; session_id: string; updated_at: Date }>(
    `SELECT s.user_id, s.session_id, s.updated_at FROM agent_sessions s
      WHERE s.updated_at < $1
        AND ($3::timestamptz IS NULL OR (s.updated_at, s.user_id, s.session_id) > ($3, $4, $5))
        AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.user_id = s.user_id
                          AND r.session_id = s.session_id AND r.status = 'running')
      ORDER BY s.updated_at, s.user_id, s.session_id LIMIT $2`,
    [cutoff, limit, after?.updatedAt ?? null, after?.userId ?? null, after?.sessionId ?? null],
  );
  return rows.map((row) => ({
    userId: row.user_id,
    sessionId: row.session_id,
    updatedAt: new Date(row.updated_at),
  }));
}

import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Database } from '@agent-backend/store';
import {
  SandboxError,
  type SandboxHandle,
  type SandboxListing,
  type SandboxProvider,
  type SandboxSpec,
} from './sandbox.js';

/** Timing of the per-session sandboxes. */
export interface SessionSandboxSettings {
  /** Which deployment's sandboxes these are (metadata; the reaper only touches its own). */
  readonly deployment: string;
  /** How long a replica may take to create one before another may try. @default 60 s */
  readonly leaseMs?: number;
  /** Idle time after which a sandbox is paused. */
  readonly idleMs: number;
  /** Idle time after which it is destroyed. */
  readonly maxIdleMs: number;
}

type SandboxRow = {
  session_id: string;
  user_id: string;
  provider: string;
  sandbox_id: string;
  state: string;
  last_used_at: Date;
};

/** One step of a sweep that failed; the sweep went on with the others and retries it next pass. */
export interface SweepFailure {
  readonly step: 'pause' | 'destroy' | 'orphan' | 'list';
  readonly provider: string;
  /** The sandbox, for every step but `list`. */
  readonly sandboxId?: string;
  /** The provider's error message (SandboxError messages carry no credentials). */
  readonly message: string;
}

/** What a sweep did. */
export interface SweepOutcome {
  paused: number;
  destroyed: number;
  orphans: number;
  failures: SweepFailure[];
}

/**
 * The ephemeral key held while a session's sandbox is created: per user and session, like the
 * row (session ids are per user, docs/agent.md).
 */
export const sandboxLeaseKey = (userId: string, sessionId: string): string =>
  `sandbox-lease:${encodeURIComponent(userId)}:${sessionId}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One sandbox per session: created on the session's first code call, its provider id
 * kept in the store so a later run on any replica reconnects to it, created under a lease in the
 * ephemeral store so two replicas racing for one session never make two, paused when idle and
 * destroyed when idle for long by {@link sweep}, which also destroys sandboxes of this
 * deployment that no session knows (a replica killed between creating one and recording it).
 */
export class SessionSandboxes {
  private readonly leaseMs: number;

  constructor(
    private readonly db: Database,
    private readonly ephemeral: EphemeralStore,
    private readonly settings: SessionSandboxSettings,
  ) {
    this.leaseMs = settings.leaseMs ?? 60_000;
  }

  /** The session's sandbox on `provider`, reconnected or created. */
  async acquire(
    provider: SandboxProvider,
    userId: string,
    sessionId: string,
    hostWorkingDirectory?: string,
    signal?: AbortSignal,
  ): Promise<SandboxHandle> {
    const spec: SandboxSpec = {
      metadata: { userId, sessionId, deployment: this.settings.deployment },
      ...(hostWorkingDirectory ? { hostWorkingDirectory } : {}),
    };
    const deadline = Date.now() + 2 * this.leaseMs;
    for (;;) {
      signal?.throwIfAborted();
      const existing = await this.reconnect(provider, userId, sessionId, spec);
      if (existing) return existing;
      const leaseKey = sandboxLeaseKey(userId, sessionId);
      const lease = `${process.pid}:${Math.random()}`;
      if (await this.ephemeral.set(leaseKey, lease, { ifAbsent: true, ttlMs: this.leaseMs })) {
        try {
          // Another replica may have finished creating one just before the lease was free.
          const raced = await this.reconnect(provider, userId, sessionId, spec);
          if (raced) return raced;
          const sandbox = await provider.create(spec);
          await this.db.query(
            `INSERT INTO session_sandboxes (session_id, user_id, provider, sandbox_id, state)
             VALUES ($1, $2, $3, $4, 'running')
             ON CONFLICT (user_id, session_id) DO UPDATE
               SET provider = $3, sandbox_id = $4, state = 'running', created_at = now(),
                   last_used_at = now()`,
            [sessionId, userId, provider.name, sandbox.id],
          );
          return sandbox;
        } finally {
          if ((await this.ephemeral.get(leaseKey)) === lease) await this.ephemeral.delete(leaseKey);
        }
      }
      // Another replica is creating it: wait for its row.
      if (Date.now() > deadline) {
        throw new SandboxError('unavailable', 'the session sandbox is being created elsewhere');
      }
      await sleep(100);
    }
  }

  /** The session's sandbox on `provider` if it has one, reconnected; never creates one. */
  async find(
    provider: SandboxProvider,
    userId: string,
    sessionId: string,
  ): Promise<SandboxHandle | undefined> {
    return this.reconnect(provider, userId, sessionId, {
      metadata: { userId, sessionId, deployment: this.settings.deployment },
    });
  }

  /** Marks the session's sandbox used now (the idle clock restarts). */
  async touch(userId: string, sessionId: string): Promise<void> {
    await this.db.query(
      `UPDATE session_sandboxes SET last_used_at = now(), state = 'running'
       WHERE user_id = $1 AND session_id = $2`,
      [userId, sessionId],
    );
  }

  /**
   * Pauses sandboxes idle past `idleMs`, destroys those idle past `maxIdleMs`, and destroys the
   * providers' sandboxes of this deployment that no session records (older than twice the
   * lease, so one being recorded right now is spared). A step that fails (the provider refuses
   * one sandbox) is reported in `failures` and the sweep goes on with the rest; the failed one is
   * tried again by the next sweep. Only a store error ends a sweep early.
   */
  async sweep(providers: readonly SandboxProvider[], now = Date.now()): Promise<SweepOutcome> {
    const outcome: SweepOutcome = { paused: 0, destroyed: 0, orphans: 0, failures: [] };
    // Each step on its own: one sandbox the provider refuses to pause or destroy (or one provider
    // that does not answer) must not keep the others running; its row stays, so the next pass
    // tries it again.
    const attempt = async (
      step: SweepFailure['step'],
      provider: string,
      sandboxId: string | undefined,
      work: () => Promise<void>,
    ): Promise<boolean> => {
      try {
        await work();
        return true;
      } catch (error) {
        outcome.failures.push({
          step,
          provider,
          ...(sandboxId ? { sandboxId } : {}),
          message: error instanceof Error ? error.message : String(error),
        });
        return false;
      }
    };
    const byName = new Map(providers.map((p) => [p.name, p]));
    const { rows } = await this.db.query<SandboxRow>(
      `SELECT session_id, user_id, provider, sandbox_id, state, last_used_at
       FROM session_sandboxes WHERE last_used_at < $1`,
      [new Date(now - this.settings.idleMs)],
    );
    for (const row of rows) {
      const provider = byName.get(row.provider);
      if (!provider) continue;
      if (row.last_used_at.getTime() < now - this.settings.maxIdleMs) {
        const done = await attempt('destroy', provider.name, row.sandbox_id, async () => {
          await provider.destroy(row.sandbox_id);
          await this.db.query(
            `DELETE FROM session_sandboxes
             WHERE user_id = $1 AND session_id = $2 AND sandbox_id = $3`,
            [row.user_id, row.session_id, row.sandbox_id],
          );
        });
        if (done) outcome.destroyed += 1;
      } else if (row.state === 'running') {
        const done = await attempt('pause', provider.name, row.sandbox_id, async () => {
          await provider.pause(row.sandbox_id);
          await this.db.query(
            // Not when a run used it meanwhile (its touch moved last_used_at past the cutoff).
            `UPDATE session_sandboxes SET state = 'paused'
             WHERE user_id = $1 AND session_id = $2 AND sandbox_id = $3 AND last_used_at < $4`,
            [row.user_id, row.session_id, row.sandbox_id, new Date(now - this.settings.idleMs)],
          );
        });
        if (done) outcome.paused += 1;
      }
    }
    for (const provider of providers) {
      let listings: SandboxListing[] = [];
      const listed = await attempt('list', provider.name, undefined, async () => {
        listings = await provider.list(this.settings.deployment);
      });
      if (!listed) continue;
      const { rows: known } = await this.db.query<{ sandbox_id: string }>(
        `SELECT sandbox_id FROM session_sandboxes WHERE provider = $1`,
        [provider.name],
      );
      const recorded = new Set(known.map((r) => r.sandbox_id));
      for (const listing of listings) {
        if (recorded.has(listing.id)) continue;
        const started = listing.startedAt?.getTime() ?? 0;
        if (started > now - 2 * this.leaseMs) continue;
        const done = await attempt('orphan', provider.name, listing.id, () =>
          provider.destroy(listing.id),
        );
        if (done) outcome.orphans += 1;
      }
    }
    return outcome;
  }

  private async reconnect(
    provider: SandboxProvider,
    userId: string,
    sessionId: string,
    spec: SandboxSpec,
  ): Promise<SandboxHandle | undefined> {
    const { rows } = await this.db.query<SandboxRow>(
      `SELECT session_id, user_id, provider, sandbox_id, state, last_used_at
       FROM session_sandboxes WHERE user_id = $1 AND session_id = $2`,
      [userId, sessionId],
    );
    const row = rows[0];
    if (!row || row.provider !== provider.name) return undefined;
    const sandbox = await provider.connect(row.sandbox_id, spec);
    if (!sandbox) {
      await this.db.query(
        `DELETE FROM session_sandboxes
         WHERE user_id = $1 AND session_id = $2 AND sandbox_id = $3`,
        [userId, sessionId, row.sandbox_id],
      );
      return undefined;
    }
    await this.touch(userId, sessionId);
    return sandbox;
  }
}

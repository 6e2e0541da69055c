import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { JobQueue } from '@agent-backend/jobs';
import type { Limits } from '@agent-backend/limits';
import type { Logger } from '@agent-backend/logger';
import type { Presence } from '@agent-backend/presence';
import type { RunLog } from '@agent-backend/run-log';
import type { SandboxProvider } from '@agent-backend/sandbox';
import type { Database } from '@agent-backend/store';

/** The ports a user's data lives in, and how this process reaches them. */
export interface UserDataDeps {
  readonly db: Database;
  readonly ephemeral: EphemeralStore;
  readonly presence: Presence;
  readonly limits: Limits;
  readonly runLog: RunLog;
  readonly jobs: JobQueue;
  /**
   * Refuses every access token of the user issued until now, on every replica (the token
   * cutoff: `RevocationList.revokeUser`); gateways close the user's sockets with 4401.
   */
  readonly revokeAccessTokens: (userId: string) => Promise<void>;
  /**
   * Stops every run of the user still running or suspended, on whichever replica runs it, and
   * waits until each is recorded as ended (`RunStopper.stopUser`); resolves to how many it
   * stopped. Absent: the user's runs are not stopped (a run going on may write after the pass).
   */
  readonly stopRuns?: (userId: string) => Promise<number>;
  /** The sandbox providers configured here, to destroy the user's sandboxes with their files. */
  readonly sandboxProviders: readonly SandboxProvider[];
  readonly logger: Logger;
  /** This process's instance id: the holder of the erasures it works on. */
  readonly instanceId: string;
}

/** How an erasure proceeds. */
export interface ErasureSettings {
  /** Sessions (or rows of the other tables) removed per transaction. @default 500 */
  readonly batchSize?: number;
  /**
   * How long an erasure is left to the process working on it before another takes it over;
   * renewed with every batch. @default 30_000
   */
  readonly leaseMs?: number;
  /**
   * How long the user's token cutoff (and the user id on the erasure's record) is kept: their
   * access tokens' lifetime, after which every token it refuses has expired. @default 1 h + 1 min
   */
  readonly forgetAfterMs?: number;
  /**
   * How long the erasure waits after the token cutoff before it reads what to remove: every
   * replica polls cutoffs every 2 s, so a request it still accepted in that window has made its
   * rows by then. @default 2_500
   */
  readonly revocationWaitMs?: number;
}

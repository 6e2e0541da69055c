import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@agent-backend/testing';
import { faultProfile } from './profile.js';

/** How one request ended, as its caller saw it. */
export type Outcome =
  | { kind: 'succeeded' }
  /** Ended with an error the caller can act on: an HTTP error body with a code, an `error` event. */
  | { kind: 'failed'; code: string }
  /** Ended some other way (a reset connection, a 500 without a code, a stream cut short). */
  | { kind: 'unclear'; detail: string };

/** The counts of one kind of traffic under one fault. */
export interface Counts {
  made: number;
  succeeded: number;
  /** Failed with a clear error, by error code. */
  failed: number;
  failedBy: Record<string, number>;
  /** Ended without a clear error (must be 0 too). */
  unclear: number;
  unclearSamples: string[];
  /** No answer within the caller's own deadline (must be 0). */
  hung: number;
  /** Accepted but never done (must be 0). */
  lost: number;
  /** Done more than once (must be 0). */
  doubled: number;
}

const emptyCounts = (): Counts => ({
  made: 0,
  succeeded: 0,
  failed: 0,
  failedBy: {},
  unclear: 0,
  unclearSamples: [],
  hung: 0,
  lost: 0,
  doubled: 0,
});

/**
 * Counts every request of a fault scenario by kind of traffic, times the recovery, and writes
 * the figures to `artifacts/faults/<fault>.json` (`<fault>.long.json` in the long profile;
 * docs/RELIABILITY.md is written from these).
 */
export class Tally {
  readonly kinds = new Map<string, Counts>();
  readonly notes: string[] = [];
  /** Milliseconds from the end of the fault to the first success of every kind checked. */
  recoveryMs: number | undefined;
  private readonly startedAt = Date.now();

  constructor(
    readonly fault: string,
    readonly description: string,
  ) {}

  counts(kind: string): Counts {
    let counts = this.kinds.get(kind);
    if (!counts) this.kinds.set(kind, (counts = emptyCounts()));
    return counts;
  }

  /**
   * Runs one request with its own deadline and counts how it ended. `request` gets a signal that
   * aborts at the deadline; an answer after it counts as hung (the caller gave up).
   */
  async track(
    kind: string,
    deadlineMs: number,
    request: (signal: AbortSignal) => Promise<Outcome>,
  ): Promise<Outcome | 'hung'> {
    const counts = this.counts(kind);
    counts.made++;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'hung'>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new Error('deadline'));
        resolve('hung');
      }, deadlineMs);
    });
    const outcome = await Promise.race([
      request(controller.signal).catch((error: unknown): Outcome => ({
        kind: 'unclear',
        detail: describe(error),
      })),
      deadline,
    ]);
    clearTimeout(timer);
    if (outcome === 'hung' || controller.signal.aborted) {
      counts.hung++;
      return 'hung';
    }
    this.add(kind, outcome);
    return outcome;
  }

  /** Counts an outcome observed some other way (a job's run, a reply). */
  add(kind: string, outcome: Outcome): void {
    const counts = this.counts(kind);
    // `internal_error` is the code of a bug, not an answer a caller can act on.
    if (outcome.kind === 'failed' && outcome.code.includes('internal_error'))
      outcome = { kind: 'unclear', detail: outcome.code };
    if (outcome.kind === 'succeeded') counts.succeeded++;
    else if (outcome.kind === 'failed') {
      counts.failed++;
      counts.failedBy[outcome.code] = (counts.failedBy[outcome.code] ?? 0) + 1;
    } else {
      counts.unclear++;
      if (counts.unclearSamples.length < 5) counts.unclearSamples.push(outcome.detail);
    }
  }

  note(text: string): void {
    this.notes.push(text);
  }

  /** Writes the figures; returns the path. */
  write(): string {
    const dir = join(REPO_ROOT, 'artifacts', 'faults');
    mkdirSync(dir, { recursive: true });
    const profile = faultProfile().name;
    const file = join(
      dir,
      profile === 'ci' ? `${this.fault}.json` : `${this.fault}.${profile}.json`,
    );
    const report = {
      fault: this.fault,
      description: this.description,
      profile: faultProfile().name,
      recoveryMs: this.recoveryMs ?? null,
      durationMs: Date.now() - this.startedAt,
      kinds: Object.fromEntries(this.kinds),
      notes: this.notes,
      commit: gitCommit(),
      machine: machineLine(),
      at: new Date().toISOString(),
    };
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    return file;
  }

  /** Every kind's counts in one line each, for the test log. */
  summary(): string {
    return [...this.kinds]
      .map(
        ([kind, c]) =>
          `${this.fault}/${kind}: made ${c.made}, ok ${c.succeeded}, failed ${c.failed} ${JSON.stringify(c.failedBy)}, unclear ${c.unclear} ${JSON.stringify(c.unclearSamples)}, hung ${c.hung}, lost ${c.lost}, doubled ${c.doubled}`,
      )
      .join('\n');
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return `${error.name}: ${error.message}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
  }
  return String(error);
}

function gitCommit(): string {
  try {
    return execSync('git rev-parse --short HEAD', { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function machineLine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it is truthy; resolves with the milliseconds it took. */
export async function until(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
  stepMs = 100,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(stepMs);
  }
}

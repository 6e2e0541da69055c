/**
 * The Sandbox port: where a session's code runs. Every adapter (bubblewrap and Docker
 * for `sandbox_mode: local`, a cloud provider for `cloud`) implements these two interfaces and
 * passes the one contract suite (`sandbox.contract.ts`). The code tools, the per-session lease
 * and the reaper use nothing else.
 *
 * Paths given to a sandbox are POSIX paths inside it. Relative paths are relative to
 * {@link SandboxHandle.workdir}; an adapter refuses a path that resolves outside the sandbox's
 * own file tree with {@link SandboxError} `path_outside`.
 */

/** Languages `execute_code` runs. */
export type CodeLanguage = 'python' | 'javascript' | 'bash';

/** Limits of one call; the tools fill them from configuration. */
export interface ExecOptions {
  /** The call is killed when it runs longer, and answers with `timedOut: true`. */
  readonly timeoutMs: number;
  /** stdout and stderr are each cut to this many bytes, with `truncated: true`. */
  readonly maxOutputBytes: number;
  /** Aborting kills the call (the run was cancelled). */
  readonly signal?: AbortSignal;
}

/** An image larger than this is dropped (the model and the client get the others). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

/** An image the code produced (a matplotlib figure), base64. */
export interface ExecImage {
  readonly data: string;
  readonly mimeType: string;
}

/** What one call produced. A call killed at its deadline still answers (never throws for it). */
export interface ExecResult {
  readonly stdout: string;
  readonly stderr: string;
  /** `null` when the process was killed (deadline, limits, abort). */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** stdout or stderr was cut at `maxOutputBytes`. */
  readonly truncated: boolean;
  /** Images the code produced (PNG), in the order produced; empty for commands. */
  readonly images: readonly ExecImage[];
}

/** One entry of {@link SandboxHandle.listFiles}. */
export interface SandboxFileEntry {
  /** Path relative to the listed directory. */
  readonly path: string;
  readonly type: 'file' | 'directory';
  /** Bytes, for files. */
  readonly size?: number;
}

/** A live sandbox: one per session, reused by the session's later runs. */
export interface SandboxHandle {
  /** The provider's id, stored with the session so another replica can reconnect. */
  readonly id: string;
  /** The absolute directory code starts in, and relative paths are resolved against. */
  readonly workdir: string;
  runCode(language: CodeLanguage, code: string, options: ExecOptions): Promise<ExecResult>;
  /** Runs a shell command line (`bash -c`) in {@link workdir}. */
  runCommand(command: string, options: ExecOptions): Promise<ExecResult>;
  /** Writes a file, creating parent directories. */
  writeFile(path: string, data: Uint8Array | string): Promise<void>;
  /** Reads at most `maxBytes` of a file; `truncated` when it is longer. */
  readFile(path: string, maxBytes: number): Promise<{ data: Uint8Array; truncated: boolean }>;
  /** Lists a directory, `depth` levels deep (1: its entries only). */
  listFiles(path: string, depth: number): Promise<SandboxFileEntry[]>;
}

/** Labels every sandbox carries, so the reaper can find the ones a crashed replica left. */
export interface SandboxMetadata {
  readonly userId: string;
  readonly sessionId: string;
  /** Which service deployment created it (`SANDBOX_DEPLOYMENT`), so reapers leave others' alone. */
  readonly deployment: string;
}

/** A sandbox the provider knows about, as the reaper sees it. */
export interface SandboxListing {
  readonly id: string;
  readonly metadata: Partial<SandboxMetadata>;
  /** When it started, if the provider says. */
  readonly startedAt?: Date;
  readonly state: 'running' | 'paused' | 'stopped';
}

/** What a new sandbox is made from. */
export interface SandboxSpec {
  readonly metadata: SandboxMetadata;
  /**
   * `local` only: the host directory mounted read-write at the sandbox's workdir (already checked
   * to be inside `SANDBOX_LOCAL_ROOT/<user id>` by the caller, after symlinks).
   */
  readonly hostWorkingDirectory?: string;
}

/** One kind of sandbox: creates, finds again, pauses and destroys them. */
export interface SandboxProvider {
  /** `bwrap`, `docker`, `e2b`: in logs and errors. */
  readonly name: string;
  readonly mode: 'local' | 'cloud';
  /** The working directory of its sandboxes ({@link SandboxHandle.workdir}). */
  readonly workdir: string;
  create(spec: SandboxSpec): Promise<SandboxHandle>;
  /**
   * Reconnects to a sandbox made earlier (on any replica), resuming it when paused. `undefined`
   * when it is gone (destroyed, expired): the caller creates a new one.
   */
  connect(id: string, spec: SandboxSpec): Promise<SandboxHandle | undefined>;
  /** Pauses (or stops) an idle sandbox so it costs nothing; a later `connect` resumes it. */
  pause(id: string): Promise<void>;
  /** Destroys it; destroying one that is gone is not an error. */
  destroy(id: string): Promise<void>;
  /** The sandboxes of this deployment, for the reaper. */
  list(deployment: string): Promise<SandboxListing[]>;
}

/** Why a sandbox operation failed, for the tool's error text. */
export type SandboxErrorCode =
  'path_outside' | 'not_found' | 'too_large' | 'unavailable' | 'provider_error';

export class SandboxError extends Error {
  constructor(
    readonly code: SandboxErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SandboxError';
  }
}

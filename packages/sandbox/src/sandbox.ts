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

/** An image larger than this is left out unread (the model and the client get the others). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/**
 * Images one call returns at most; the code's further images are left out unread (and
 * removed), and the answer says how many. Everything the code wrote is the sandbox's to choose:
 * without this, a thousand 5 MiB files in the outputs directory would all be read into the
 * host's memory and sent in one tool result.
 */
export const MAX_IMAGES_PER_CALL = 10;
/** The images one call returns together at most, in bytes of the files (before base64). */
export const MAX_IMAGE_BYTES_PER_CALL = 10 * 1024 * 1024;

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
  /**
   * Image files the code produced that are not in {@link images}: past
   * {@link MAX_IMAGES_PER_CALL} or {@link MAX_IMAGE_BYTES_PER_CALL}, larger than
   * {@link MAX_IMAGE_BYTES}, or not a PNG. @default 0
   */
  readonly imagesLeftOut?: number;
}

/** One entry of {@link SandboxHandle.listFiles}. */
export interface SandboxFileEntry {
  /** Path relative to the listed directory. */
  readonly path: string;
  readonly type: 'file' | 'directory';
  /** Bytes, for files. */
  readonly size?: number;
}

/**
 * What {@link SandboxHandle.listFiles} answers: the entries, sorted by path (plain code-unit
 * order), with `cut` set when the walk stopped at its `limit` before the end.
 */
export type SandboxFileListing = SandboxFileEntry[] & { readonly cut?: true };

/** Bounds of one {@link SandboxHandle.listFiles}. */
export interface ListOptions {
  /**
   * The walk stops once it found this many entries and sees there is one more (the listing is
   * then `cut`). Local sandboxes also stop after looking at {@link LIST_SCAN_FACTOR} times as
   * many entries (links and other entries they leave out count). @default no limit
   */
  readonly limit?: number;
  /** Stops the walk (the call was cancelled): what was found so far is answered, `cut`. */
  readonly signal?: AbortSignal;
  /** Cloud: the deadline of the listing command, run in the sandbox. @default 60 s */
  readonly timeoutMs?: number;
}

/** With a `limit`, how many entries a local listing looks at, per entry it may list. */
export const LIST_SCAN_FACTOR = 10;

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
  /**
   * Lists a directory, `depth` levels deep (1: its entries only): directories and regular files,
   * no links. With `options.limit` the walk stops early (the host never walks a whole tree the
   * sandbox may have made millions of entries in).
   */
  listFiles(path: string, depth: number, options?: ListOptions): Promise<SandboxFileListing>;
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

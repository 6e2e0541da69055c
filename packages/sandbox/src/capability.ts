import { existsSync, lstatSync, realpathSync } from 'node:fs';
import { isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import {
  AgentRunError,
  type RunContribution,
  type RunInfo,
  type ToolSource,
} from '@agent-backend/agent-runtime';
import type { EphemeralStore } from '@agent-backend/ephemeral';
import type { Database } from '@agent-backend/store';
import { isWithin } from './local/host-path.js';
import type { SandboxHandle, SandboxProvider } from './sandbox.js';
import { SessionSandboxes, type SessionSandboxSettings } from './session-sandboxes.js';
import { sandboxTools, type SandboxToolSettings } from './tools.js';

/** Where files a run brings (its active skills' resources) are put in every sandbox. */
export const RUN_FILES_DIR = '/tmp/skills';

/** Files another capability wants in the run's sandbox (an active skill's resources). */
export interface RunFiles {
  /** Said in the system prompt: where the files are. */
  readonly note: string;
  /** The files wanted now; asked before each code call, so files of a skill loaded later come too. */
  current(): ReadonlyArray<{ readonly path: string; read(): Promise<Uint8Array | undefined> }>;
}

/** What the code-execution capability is built from. */
export interface SandboxCapabilityOptions {
  readonly db: Database;
  readonly ephemeral: EphemeralStore;
  /** `local` runs: the provider, and the root under which each user's directories lie. */
  readonly local?: { readonly provider: SandboxProvider; readonly root: string };
  /** `cloud` runs: the configured provider, if any. */
  readonly cloud?: SandboxProvider;
  readonly tools: SandboxToolSettings;
  readonly sessions: SessionSandboxSettings;
  /** Files of the run to place in its sandbox under `dir` before code runs (skills' resources). */
  readonly runFiles?: (run: RunInfo, dir: string) => Promise<RunFiles | undefined>;
}

/** The capability: the tool source of runs, and the sweep for the worker. */
export interface SandboxCapability {
  readonly source: ToolSource;
  readonly sessions: SessionSandboxes;
  /** Every configured provider (the sweep goes over each). */
  readonly providers: readonly SandboxProvider[];
}

const notice = (message: string): RunContribution => ({
  events: [{ type: 'notice', code: 'sandbox_unavailable', message }],
});

/**
 * The user's own directory for local sandboxes: `<root>/<user id>`, the id taken as one path
 * segment. An id that cannot be one (empty, `/`, `.`, `..`) has none: its directory would be
 * the root itself or outside it, naming every user's.
 */
function userRoot(root: string, userId: string): string | undefined {
  if (
    userId === '' ||
    userId.includes('/') ||
    userId === '.' ||
    userId === '..' ||
    userId.includes('\0')
  ) {
    return undefined;
  }
  const dir = join(root, userId);
  return existsSync(dir) ? realpathSync(dir) : undefined;
}

/**
 * `working_directory` resolved (relative: under the user's directory), after symlinks, or why
 * it is refused: it must exist and lie inside `<root>/<user id>`.
 */
export function resolveWorkingDirectory(
  root: string,
  userId: string,
  workingDirectory: string,
): { dir: string } | { refused: string } {
  const mine = userRoot(root, userId);
  if (!mine) return { refused: 'this user has no directory for local sandboxes on this service' };
  // One answer for a path that is missing, outside, or leads outside through a link (which
  // sandboxed code may have made): telling them apart would tell whether a host path exists.
  const refused = {
    refused: `working_directory ${workingDirectory} is not a directory inside this user's directory`,
  };
  const wanted = isAbsolute(workingDirectory) ? workingDirectory : resolve(mine, workingDirectory);
  // Looked up only when written inside the user's directory (as configured or as resolved).
  if (!isWithin(resolve(root, userId), wanted) && !isWithin(mine, wanted)) return refused;
  let real: string;
  try {
    real = realpathSync(wanted);
  } catch {
    return refused;
  }
  return isWithin(mine, real) ? { dir: real } : refused;
}

/**
 * Whether `path` (relative) names a regular file under `dir` reached through plain directories
 * only: no component is a link (sandboxed code may have made one, to anywhere on the host).
 */
function plainFileUnder(dir: string, path: string): boolean {
  const at = resolve(dir, path);
  if (!isWithin(dir, at) || at === dir) return false;
  let current = dir;
  const parts = relative(dir, at).split(sep);
  for (const [i, part] of parts.entries()) {
    current = join(current, part);
    let info;
    try {
      info = lstatSync(current);
    } catch {
      return false;
    }
    if (i < parts.length - 1 ? !info.isDirectory() : !info.isFile()) return false;
  }
  return true;
}

/** The files the user named that are not there (the runtime's context lists the others). */
function missingSection(missing: readonly string[]): string {
  return missing.length > 0
    ? `Files the user named that are not in the working directory: ${missing.join(', ')}`
    : '';
}

/** Entries of one folder looked at for `sandbox_files`: a file past them counts as not found. */
const MAX_FOLDER_ENTRIES = 10_000;

/**
 * Which of `files` the sandbox does not hold: one listing per directory named, of at most
 * {@link MAX_FOLDER_ENTRIES} entries within 10 s (the sandbox's code may have filled it).
 */
async function missingFiles(
  sandbox: SandboxHandle,
  files: ReadonlyArray<{ readonly path: string }>,
): Promise<string[]> {
  const listings = new Map<string, Promise<Set<string>>>();
  const missing: string[] = [];
  for (const file of files) {
    const dir = posix.dirname(file.path);
    let listing = listings.get(dir);
    if (!listing) {
      listing = sandbox.listFiles(dir, 1, { limit: MAX_FOLDER_ENTRIES, timeoutMs: 10_000 }).then(
        (entries) => new Set(entries.filter((e) => e.type === 'file').map((e) => e.path)),
        () => new Set<string>(),
      );
      listings.set(dir, listing);
    }
    if (!(await listing).has(posix.basename(file.path))) missing.push(file.path);
  }
  return missing;
}

/**
 * Code execution for runs (docs/sandbox.md): the code tools on the session's sandbox,
 * for runs whose `sandbox_mode` has a provider here, in `agent` and `plan` modes (`ask` is
 * read-only, `none` has no sandbox). A run without `sandbox_mode` gets `cloud` when a cloud
 * provider is configured and `none` otherwise. A mode asked for without a provider gets no
 * tools and one `notice` saying why; code never runs on the server outside a sandbox. A local run whose
 * `working_directory` is not the user's fails with `working_directory_refused`.
 */
export function createSandboxCapability(options: SandboxCapabilityOptions): SandboxCapability {
  const sessions = new SessionSandboxes(options.db, options.ephemeral, options.sessions);
  const providers = [options.local?.provider, options.cloud].filter(
    (p): p is SandboxProvider => p !== undefined,
  );

  const source: ToolSource = async (run: RunInfo) => {
    const { workingDirectory, files } = run.request.capabilities.sandbox;
    // Not asked for: code runs where this service can run it, and nowhere (silently) otherwise.
    const mode = run.request.capabilities.sandbox.mode ?? (options.cloud ? 'cloud' : 'none');
    if (mode === 'none' || run.request.mode === 'ask') return [];
    let provider: SandboxProvider;
    let hostDir: string | undefined;
    let missing: string[] = [];
    let existing: SandboxHandle | undefined;
    if (mode === 'local') {
      if (!options.local) {
        return notice('Local sandboxes are not enabled on this service (SANDBOX_LOCAL_ROOT).');
      }
      const resolved = resolveWorkingDirectory(
        options.local.root,
        run.userId,
        workingDirectory ?? '',
      );
      if ('refused' in resolved) {
        throw new AgentRunError('working_directory_refused', resolved.refused);
      }
      provider = options.local.provider;
      hostDir = resolved.dir;
      // A local sandbox file is the file at `path` under the working directory.
      missing = files
        .slice(0, 100)
        .filter((f) => !plainFileUnder(hostDir!, f.path))
        .map((f) => f.path);
    } else {
      if (!options.cloud) {
        return notice(
          'This service has no cloud sandbox provider, so code cannot run in this conversation ' +
            '(sandbox_mode "local" or "none" are the alternatives).',
        );
      }
      provider = options.cloud;
      // A cloud sandbox file is a file the session's sandbox already holds at `path` (written by
      // an earlier run's tools or code); a session without a sandbox has none of them.
      if (files.length > 0) {
        existing = await sessions.find(provider, run.userId, run.sessionId);
        missing = existing
          ? await missingFiles(existing, files.slice(0, 100))
          : files.slice(0, 100).map((f) => f.path);
      }
    }
    const runFiles = await options.runFiles?.(run, RUN_FILES_DIR);
    const placed = new Set<string>();
    // Copies the run's files not yet in the sandbox (a skill loaded since the last call).
    const place = async (handle: SandboxHandle) => {
      for (const file of runFiles?.current() ?? []) {
        if (placed.has(file.path)) continue;
        const data = await file.read();
        if (data) await handle.writeFile(file.path, data);
        placed.add(file.path);
      }
      return handle;
    };
    let sandbox: Promise<SandboxHandle> | undefined = existing && Promise.resolve(existing);
    const tools = sandboxTools(
      {
        sandbox: async (signal) => {
          sandbox ??= sessions.acquire(provider, run.userId, run.sessionId, hostDir, signal);
          sandbox.catch(() => (sandbox = undefined));
          return place(await sandbox);
        },
        touch: () => sessions.touch(run.userId, run.sessionId),
      },
      options.tools,
    );
    const section = [
      `You can run code in a sandbox (${provider.mode}) with execute_code and run_command; ` +
        `files persist for this conversation in the working directory (${provider.workdir}).`,
      missingSection(missing),
      runFiles?.note ?? '',
    ]
      .filter(Boolean)
      .join('\n');
    return {
      tools,
      promptSections: [section],
      ...(missing.length > 0
        ? {
            events: [
              {
                type: 'notice' as const,
                code: 'sandbox_files_missing',
                message: `Not found in the working directory: ${missing.join(', ')}`,
              },
            ],
          }
        : {}),
    };
  };
  return { source, sessions, providers };
}

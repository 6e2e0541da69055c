import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import {
  SandboxError,
  type ExecOptions,
  type ExecResult,
  type SandboxHandle,
  type SandboxListing,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.js';
import { bwrapArgs, NODE, whyBwrapUnusable } from './bwrap-args.js';
import {
  DEFAULT_LOCAL_LIMITS,
  LOCAL_WORKDIR,
  LocalStateDirs,
  localHandle,
  newSandboxId,
  type LocalLimits,
} from './local-sandbox.js';
import { notTheDirectory, openDirNoFollow, removeDirNoFollow } from './no-follow.js';
import { CallCgroup, processLimitMode } from './process-limit.js';
import { runProcess } from './run-process.js';

export { LOCAL_OUTPUTS_DIR } from './host-mounted.js';
export { DEFAULT_LOCAL_LIMITS, LOCAL_WORKDIR, type LocalLimits } from './local-sandbox.js';

export interface BubblewrapOptions {
  /** Where each sandbox keeps its state (`<id>/meta.json`, its private `/tmp`). */
  readonly stateDir: string;
  /** Give code the host's network. @default false */
  readonly network?: boolean;
  readonly limits?: Partial<LocalLimits>;
  /** @default 'bwrap' */
  readonly bwrapPath?: string;
}

interface Meta {
  readonly id: string;
  readonly metadata: SandboxSpec['metadata'];
  readonly hostWorkingDirectory: string;
  readonly createdAt: string;
  state: 'running' | 'paused';
}

/**
 * Local sandboxes in bubblewrap (`bwrap`, no daemon): each call runs in fresh user, PID, IPC,
 * UTS, cgroup and (unless `network`) network namespaces, as an unprivileged user, with the host's
 * `/usr` read-only, a handful of `/etc` files, no other host path than the session's working
 * directory (at `/workspace`) and its own `/tmp`, a clean environment, and limits on memory, CPU
 * time, processes and file size. A sandbox is its state directory: nothing runs between calls,
 * so "paused" costs nothing and a sandbox is found again on any replica sharing `stateDir`.
 */
export class BubblewrapSandboxProvider implements SandboxProvider {
  readonly name = 'bwrap';
  readonly mode = 'local' as const;
  readonly workdir = LOCAL_WORKDIR;
  private readonly limits: LocalLimits;
  private readonly dirs: LocalStateDirs;
  private readonly running = new Map<string, Set<AbortController>>();

  constructor(private readonly options: BubblewrapOptions) {
    this.limits = { ...DEFAULT_LOCAL_LIMITS, ...options.limits };
    this.dirs = new LocalStateDirs(options.stateDir);
  }

  async create(spec: SandboxSpec): Promise<SandboxHandle> {
    const id = newSandboxId();
    await mkdir(join(this.dirs.dirOf(id), 'tmp', 'outputs'), { recursive: true });
    const meta: Meta = {
      id,
      metadata: spec.metadata,
      hostWorkingDirectory: await this.dirs.workingDirectory(id, spec),
      createdAt: new Date().toISOString(),
      state: 'running',
    };
    await this.writeMeta(meta);
    return this.handle(meta);
  }

  /**
   * The sandbox again. A later run of the session may name another working directory: the
   * sandbox then mounts that one (its own `/tmp` stays).
   */
  async connect(id: string, spec?: SandboxSpec): Promise<SandboxHandle | undefined> {
    const found = await this.readMeta(id);
    if (!found) return undefined;
    const host = spec?.hostWorkingDirectory
      ? await this.dirs.workingDirectory(id, spec)
      : found.hostWorkingDirectory;
    const meta: Meta = { ...found, hostWorkingDirectory: host, state: 'running' };
    if (found.state !== 'running' || found.hostWorkingDirectory !== host) {
      await this.writeMeta(meta);
    }
    return this.handle(meta);
  }

  async pause(id: string): Promise<void> {
    this.stopCalls(id);
    const meta = await this.readMeta(id);
    if (!meta) return;
    meta.state = 'paused';
    await this.writeMeta(meta);
  }

  async destroy(id: string): Promise<void> {
    this.stopCalls(id);
    // The user's working directory is theirs: only the sandbox's own state goes.
    await removeDirNoFollow(this.dirs.dirOf(id));
  }

  async list(deployment: string): Promise<SandboxListing[]> {
    let ids: string[];
    try {
      ids = await readdir(this.options.stateDir);
    } catch {
      return [];
    }
    const listings: SandboxListing[] = [];
    for (const id of ids) {
      const meta = await this.readMeta(id);
      if (!meta || meta.metadata.deployment !== deployment) continue;
      listings.push({
        id,
        metadata: meta.metadata,
        startedAt: new Date(meta.createdAt),
        state: meta.state,
      });
    }
    return listings;
  }

  private async readMeta(id: string): Promise<Meta | undefined> {
    try {
      return JSON.parse(await readFile(join(this.dirs.dirOf(id), 'meta.json'), 'utf8')) as Meta;
    } catch {
      return undefined;
    }
  }

  private async writeMeta(meta: Meta): Promise<void> {
    await writeFile(join(this.dirs.dirOf(meta.id), 'meta.json'), JSON.stringify(meta));
  }

  private stopCalls(id: string): void {
    for (const call of this.running.get(id) ?? []) call.abort();
  }

  private handle(meta: Meta): SandboxHandle {
    const tmp = this.dirs.tmpOf(meta.id);
    return localHandle(this.dirs, meta.id, meta.hostWorkingDirectory, tmp, NODE.inside, (argv, o) =>
      this.exec(meta, tmp, argv, o),
    );
  }

  /**
   * One call. The working directory is opened here, component by component with no link
   * followed (its real path was taken when the run resolved it), and bwrap binds that very
   * directory from the descriptor: a working directory swapped for a link since (by another
   * session of the user whose sandbox sees its parent) is refused, never followed to wherever
   * the link points.
   */
  private async exec(
    meta: Meta,
    tmp: string,
    argv: readonly string[],
    options: ExecOptions,
  ): Promise<Omit<ExecResult, 'images'>> {
    const mode = processLimitMode();
    if (mode.kind === 'none') throw new SandboxError('unavailable', mode.why);
    const tooOld = whyBwrapUnusable(this.options.bwrapPath ?? 'bwrap');
    if (tooOld) throw new SandboxError('unavailable', tooOld);
    await mkdir(this.dirs.codeDirOf(meta.id), { recursive: true });
    let workspace: FileHandle;
    try {
      workspace = await openDirNoFollow(meta.hostWorkingDirectory);
    } catch (error) {
      throw new SandboxError('unavailable', notTheDirectory(LOCAL_WORKDIR), { cause: error });
    }
    try {
      return await this.execIn(meta, tmp, workspace, argv, options, mode);
    } finally {
      await workspace.close();
    }
  }

  private async execIn(
    meta: Meta,
    tmp: string,
    workspace: FileHandle,
    argv: readonly string[],
    options: ExecOptions,
    mode: Exclude<ReturnType<typeof processLimitMode>, { kind: 'none' }>,
  ): Promise<Omit<ExecResult, 'images'>> {
    const limits = this.limits;
    const ulimits = [
      `ulimit -d ${Math.floor(limits.memoryBytes / 1024)}`,
      `ulimit -t ${limits.cpuSeconds}`,
      `ulimit -f ${Math.floor(limits.maxFileBytes / 1024)}`,
      ...(mode.kind === 'rlimit' ? [`ulimit -u ${limits.maxProcesses}`] : []),
    ].join(' && ');
    const inner = ['/bin/bash', '-c', `${ulimits} && exec "$@"`, 'sandbox', ...argv];
    // bwrap's options (host paths among them) come through a pipe (`--args`), so the sandbox's
    // `/proc/1/cmdline` (bwrap's init) shows none of them; bwrap closes both descriptors before
    // the sandbox's code starts.
    const fds = [
      workspace.fd,
      Buffer.from(
        `${bwrapArgs({
          network: this.options.network ?? false,
          shmBytes: limits.shmBytes,
          tmp,
          workspaceFd: 3,
          codeDir: this.dirs.codeDirOf(meta.id),
        }).join('\0')}\0`,
      ),
    ];
    const bwrap = [this.options.bwrapPath ?? 'bwrap', '--args', '4', '--', ...inner];
    const controller = new AbortController();
    const calls = this.running.get(meta.id) ?? new Set<AbortController>();
    calls.add(controller);
    this.running.set(meta.id, calls);
    const signal = options.signal
      ? AbortSignal.any([options.signal, controller.signal])
      : controller.signal;
    let cgroup: CallCgroup | undefined;
    try {
      if (mode.kind === 'cgroup') {
        try {
          cgroup = new CallCgroup(mode, randomUUID(), limits);
        } catch (error) {
          // The host's error names host paths: the tool says what failed, not where.
          throw new SandboxError(
            'unavailable',
            `could not make the call's cgroup (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
            { cause: error },
          );
        }
        // The shell joins the groups before it becomes bwrap: everything after is bounded.
        const files = cgroup.procsFiles;
        const joinGroups = files.map((_, i) => `echo $$ > "$${i + 1}"`).join(' && ');
        return await runProcess(
          '/bin/sh',
          [
            '-c',
            `${joinGroups} && shift ${files.length} && exec "$@"`,
            'sandbox-call',
            ...files,
            ...bwrap,
          ],
          { ...options, signal, fds },
        );
      }
      return await runProcess(bwrap[0]!, bwrap.slice(1), { ...options, signal, fds });
    } finally {
      await cgroup?.remove();
      calls.delete(controller);
      if (calls.size === 0) this.running.delete(meta.id);
    }
  }
}

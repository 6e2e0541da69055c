import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import {
  SandboxError,
  type CodeLanguage,
  type ExecOptions,
  type ExecResult,
  type SandboxHandle,
  type SandboxListing,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.js';
import { type Mount } from './host-path.js';
import { collectImages, hostFiles, LOCAL_CODE_DIR, prepareCode } from './host-mounted.js';
export { LOCAL_OUTPUTS_DIR } from './host-mounted.js';
import { linkFreeDir, openDirNoFollow } from './no-follow.js';
import { CallCgroup, processLimitMode } from './process-limit.js';
import { runProcess } from './run-process.js';

/** Limits of every process tree a call starts. */
export interface LocalLimits {
  /**
   * Writable memory per process (RLIMIT_DATA), and of all processes of a call together (a
   * memory cgroup, where the host has the controller; Docker: the container's limit).
   * @default 1 GiB
   */
  readonly memoryBytes: number;
  /** CPU seconds per process (RLIMIT_CPU). @default 60 */
  readonly cpuSeconds: number;
  /** Processes (and threads) of one call together (`pids` cgroup). @default 128 */
  readonly maxProcesses: number;
  /** Largest file a call may write (RLIMIT_FSIZE). @default 1 GiB */
  readonly maxFileBytes: number;
  /** Size of the call's `/dev/shm` (a RAM disk of its own, gone when the call ends). @default 64 MiB */
  readonly shmBytes: number;
}

export const DEFAULT_LOCAL_LIMITS: LocalLimits = {
  memoryBytes: 1024 ** 3,
  cpuSeconds: 60,
  maxProcesses: 128,
  maxFileBytes: 1024 ** 3,
  shmBytes: 64 * 1024 ** 2,
};

export interface BubblewrapOptions {
  /** Where each sandbox keeps its state (`<id>/meta.json`, its private `/tmp`). */
  readonly stateDir: string;
  /** Give code the host's network. @default false */
  readonly network?: boolean;
  readonly limits?: Partial<LocalLimits>;
  /** @default 'bwrap' */
  readonly bwrapPath?: string;
}

/** The working directory inside every local sandbox. */
export const LOCAL_WORKDIR = '/workspace';
const NODE_PREFIX_INSIDE = '/opt/node';

/** This Node.js as the sandbox sees it: under /usr as it is, elsewhere mounted at /opt/node. */
const NODE = (() => {
  const binary = realpathSync(process.execPath);
  const prefix = dirname(dirname(binary));
  if (binary.startsWith('/usr/')) return { inside: binary, prefix: undefined };
  return { inside: posix.join(NODE_PREFIX_INSIDE, binary.slice(prefix.length)), prefix };
})();

/**
 * Why this bwrap cannot run calls safely (it lacks an option they rely on: `--bind-fd` and
 * `--size` came with bubblewrap 0.8), or undefined. Asked once per binary.
 */
const bwrapTooOld = new Map<string, string | undefined>();
function whyBwrapUnusable(bwrap: string): string | undefined {
  if (!bwrapTooOld.has(bwrap)) {
    let help = '';
    try {
      help = execFileSync(bwrap, ['--help'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        bwrapTooOld.set(bwrap, `${bwrap} is not installed (bubblewrap 0.8 or later is needed)`);
        return bwrapTooOld.get(bwrap);
      }
      help = String((error as { stdout?: unknown }).stdout ?? '');
    }
    const missing = ['--bind-fd', '--size', '--args'].filter((option) => !help.includes(option));
    bwrapTooOld.set(
      bwrap,
      missing.length > 0
        ? `bubblewrap 0.8 or later is needed to run code safely (this ${bwrap} lacks ${missing.join(', ')})`
        : undefined,
    );
  }
  return bwrapTooOld.get(bwrap);
}

interface Meta {
  readonly id: string;
  readonly metadata: SandboxSpec['metadata'];
  readonly hostWorkingDirectory: string;
  readonly createdAt: string;
  state: 'running' | 'paused';
}

/** The `/etc` entries code needs (dynamic linker, alternatives, certificates, fonts, matplotlib). */
const ETC_ENTRIES = [
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'ssl',
  'ca-certificates',
  'fonts',
  'localtime',
  'mime.types',
  'matplotlibrc',
  'python3',
  'python3.11',
  'python3.12',
];
const ROOT_ENTRIES = ['bin', 'sbin', 'lib', 'lib32', 'lib64'];

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
  private readonly running = new Map<string, Set<AbortController>>();

  constructor(private readonly options: BubblewrapOptions) {
    this.limits = { ...DEFAULT_LOCAL_LIMITS, ...options.limits };
  }

  async create(spec: SandboxSpec): Promise<SandboxHandle> {
    const id = `sbx_${randomUUID()}`;
    const dir = this.dirOf(id);
    await mkdir(join(dir, 'tmp', 'outputs'), { recursive: true });
    // The caller's directory is the real path it checked (`resolveWorkingDirectory`): taken as
    // it is, once it is still a directory with no link on the way (never resolved again, which
    // would follow a link planted since the check). The default one is the service's own.
    let host: string;
    if (spec.hostWorkingDirectory) {
      host = await linkFreeDir(spec.hostWorkingDirectory, LOCAL_WORKDIR);
    } else {
      await mkdir(join(dir, 'workspace'), { recursive: true });
      host = realpathSync(join(dir, 'workspace'));
    }
    const meta: Meta = {
      id,
      metadata: spec.metadata,
      hostWorkingDirectory: host,
      createdAt: new Date().toISOString(),
      state: 'running',
    };
    await writeFile(join(dir, 'meta.json'), JSON.stringify(meta));
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
      ? await linkFreeDir(spec.hostWorkingDirectory, LOCAL_WORKDIR)
      : found.hostWorkingDirectory;
    const meta: Meta = { ...found, hostWorkingDirectory: host, state: 'running' };
    if (found.state !== 'running' || found.hostWorkingDirectory !== host) {
      await writeFile(join(this.dirOf(id), 'meta.json'), JSON.stringify(meta));
    }
    return this.handle(meta);
  }

  async pause(id: string): Promise<void> {
    this.stopCalls(id);
    const meta = await this.readMeta(id);
    if (!meta) return;
    meta.state = 'paused';
    await writeFile(join(this.dirOf(id), 'meta.json'), JSON.stringify(meta));
  }

  async destroy(id: string): Promise<void> {
    this.stopCalls(id);
    // The user's working directory is theirs: only the sandbox's own state goes.
    await rm(this.dirOf(id), { recursive: true, force: true });
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

  private dirOf(id: string): string {
    if (!/^sbx_[0-9a-f-]{36}$/.test(id)) throw new SandboxError('not_found', `no sandbox ${id}`);
    return join(this.options.stateDir, id);
  }

  private async readMeta(id: string): Promise<Meta | undefined> {
    try {
      return JSON.parse(await readFile(join(this.dirOf(id), 'meta.json'), 'utf8')) as Meta;
    } catch {
      return undefined;
    }
  }

  private stopCalls(id: string): void {
    for (const call of this.running.get(id) ?? []) call.abort();
  }

  private handle(meta: Meta): SandboxHandle {
    // The sandbox's state directory is the service's alone (no sandbox sees it): its real path
    // is taken once; what is below `tmp` is the sandbox's and is never followed.
    mkdirSync(join(this.dirOf(meta.id), 'tmp'), { recursive: true });
    const tmp = realpathSync(join(this.dirOf(meta.id), 'tmp'));
    const mounts: Mount[] = [
      { inside: LOCAL_WORKDIR, host: meta.hostWorkingDirectory },
      { inside: '/tmp', host: tmp },
    ];
    return {
      id: meta.id,
      workdir: LOCAL_WORKDIR,
      runCode: async (language, code, options) => {
        return this.runCode(meta, tmp, language, code, options);
      },
      runCommand: async (command, options) => {
        const result = await this.exec(meta, tmp, ['/bin/bash', '-c', command], options);
        return { ...result, images: [] };
      },
      ...hostFiles(mounts, LOCAL_WORKDIR),
    };
  }

  private async runCode(
    meta: Meta,
    tmp: string,
    language: CodeLanguage,
    code: string,
    options: ExecOptions,
  ): Promise<ExecResult> {
    const prepared = await prepareCode(this.codeDirOf(meta.id), language, code, NODE.inside);
    try {
      const result = await this.exec(meta, tmp, prepared.argv, options);
      return { ...result, images: await collectImages(tmp) };
    } finally {
      await prepared.cleanup();
    }
  }

  /** The service's own directory of a sandbox's code files, mounted read-only inside. */
  private codeDirOf(id: string): string {
    return join(this.dirOf(id), 'code');
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
    await mkdir(this.codeDirOf(meta.id), { recursive: true });
    let workspace: FileHandle;
    try {
      workspace = await openDirNoFollow(meta.hostWorkingDirectory);
    } catch (error) {
      throw new SandboxError(
        'unavailable',
        `${LOCAL_WORKDIR} is no longer the directory this run was given (it was moved, removed ` +
          'or replaced by a link): nothing ran; start a new run with its working_directory',
        { cause: error },
      );
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
    const fds = [workspace.fd, Buffer.from(`${this.bwrapArgs(meta, tmp, 3).join('\0')}\0`)];
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

  /** bwrap's options; `workspaceFd`: the descriptor (in bwrap) of the working directory. */
  private bwrapArgs(meta: Meta, tmp: string, workspaceFd: number): string[] {
    const args = [
      '--unshare-all',
      ...(this.options.network ? ['--share-net'] : []),
      '--die-with-parent',
      '--new-session',
      '--uid',
      '65534',
      '--gid',
      '65534',
      '--hostname',
      'sandbox',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/local/bin:/usr/bin:/bin',
      '--setenv',
      'HOME',
      LOCAL_WORKDIR,
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--setenv',
      'TMPDIR',
      '/tmp',
      '--setenv',
      'MPLBACKEND',
      'Agg',
      '--setenv',
      'MPLCONFIGDIR',
      '/tmp/.matplotlib',
      '--setenv',
      'PYTHONDONTWRITEBYTECODE',
      '1',
      '--ro-bind',
      '/usr',
      '/usr',
    ];
    for (const entry of ROOT_ENTRIES) {
      const path = `/${entry}`;
      if (!existsSync(path)) continue;
      const info = lstatSync(path);
      if (info.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
      else if (info.isDirectory()) args.push('--ro-bind', path, path);
    }
    for (const entry of ETC_ENTRIES) {
      const path = `/etc/${entry}`;
      if (existsSync(path)) args.push('--ro-bind', path, path);
    }
    args.push(
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      // A RAM disk of the call's own, small, instead of one the size of the host's memory.
      '--size',
      String(this.limits.shmBytes),
      '--tmpfs',
      '/dev/shm',
      '--bind',
      tmp,
      '/tmp',
      '--bind-fd',
      String(workspaceFd),
      LOCAL_WORKDIR,
      // The code files: the service's own directory, read-only; outside `/tmp` and
      // `/workspace`, so bwrap makes its mount point in its own root, not in a directory the
      // sandbox could have filled with links.
      '--ro-bind',
      this.codeDirOf(meta.id),
      LOCAL_CODE_DIR,
      '--chdir',
      LOCAL_WORKDIR,
    );
    // The runtime of `javascript` code: this Node.js. Outside /usr it is mounted at /opt/node
    // (after /tmp, which would hide a Node.js installed under the host's /tmp).
    if (NODE.prefix) args.push('--ro-bind', NODE.prefix, NODE_PREFIX_INSIDE);
    // Last: bwrap's root is a tmpfs in which it made the mount points (`/etc`, `/opt`); read-only,
    // so only the working directory and `/tmp` take writes.
    args.push('--remount-ro', '/');
    return args;
  }
}

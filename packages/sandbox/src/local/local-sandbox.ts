import { randomUUID } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  SandboxError,
  type ExecOptions,
  type ExecResult,
  type SandboxHandle,
  type SandboxSpec,
} from '../sandbox.js';
import { type Mount } from './host-path.js';
import { collectImages, hostFiles, prepareCode } from './host-mounted.js';
import { linkFreeDir } from './no-follow.js';

/**
 * What the local runtimes (bubblewrap, Docker) share besides the host-side files
 * (host-mounted.ts): the limits, the working directory and environment code sees, the sandbox's
 * state directory on the host, and the handle built from a runtime's way to run one process.
 */

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

/** The working directory inside every local sandbox. */
export const LOCAL_WORKDIR = '/workspace';

/** The whole environment a call starts with (nothing of the service's own). */
export const LOCAL_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: LOCAL_WORKDIR,
  LANG: 'C.UTF-8',
  TMPDIR: '/tmp',
  MPLBACKEND: 'Agg',
  MPLCONFIGDIR: '/tmp/.matplotlib',
  PYTHONDONTWRITEBYTECODE: '1',
};

/** A new sandbox id (`sbx_<uuid>`). */
export function newSandboxId(): string {
  return `sbx_${randomUUID()}`;
}

/**
 * A sandbox's state on the host, `<stateDir>/<id>`: its own `tmp` (the sandbox's `/tmp`), `code`
 * (the service's code files, read-only inside) and, when the caller names no working directory,
 * `workspace`.
 */
export class LocalStateDirs {
  constructor(private readonly stateDir: string) {}

  /** The sandbox's directory; an id of another shape is no sandbox (`not_found`). */
  dirOf(id: string): string {
    if (!/^sbx_[0-9a-f-]{36}$/.test(id)) throw new SandboxError('not_found', `no sandbox ${id}`);
    return join(this.stateDir, id);
  }

  /** The service's own directory of a sandbox's code files, mounted read-only inside. */
  codeDirOf(id: string): string {
    return join(this.dirOf(id), 'code');
  }

  /**
   * The working directory a new sandbox mounts. The caller's directory is the real path it
   * checked (`resolveWorkingDirectory`): taken as it is, once it is still a directory with no
   * link on the way (never resolved again, which would follow a link planted since the check).
   * The default one is the service's own.
   */
  async workingDirectory(id: string, spec: SandboxSpec): Promise<string> {
    if (spec.hostWorkingDirectory) return linkFreeDir(spec.hostWorkingDirectory, LOCAL_WORKDIR);
    await mkdir(join(this.dirOf(id), 'workspace'), { recursive: true });
    return realpathSync(join(this.dirOf(id), 'workspace'));
  }

  /**
   * The real path of the sandbox's `/tmp`. The state directory is the service's alone (no sandbox
   * sees it): its real path is taken once; what is below `tmp` is the sandbox's and is never
   * followed (host-mounted.ts).
   */
  tmpOf(id: string): string {
    mkdirSync(join(this.dirOf(id), 'tmp'), { recursive: true });
    return realpathSync(join(this.dirOf(id), 'tmp'));
  }
}

/** Runs one process in the sandbox (argv inside it) and answers what it printed. */
export type LocalExec = (
  argv: readonly string[],
  options: ExecOptions,
) => Promise<Omit<ExecResult, 'images'>>;

/**
 * A local sandbox's handle: code and commands through the runtime's `exec`, code files written
 * to the service's code directory, figures collected from `/tmp/outputs`, the file tools on the
 * host-mounted working directory and `/tmp`.
 */
export function localHandle(
  dirs: LocalStateDirs,
  id: string,
  hostWorkingDirectory: string,
  /** The real path of the sandbox's `/tmp` ({@link LocalStateDirs.tmpOf}). */
  tmp: string,
  /** The `node` binary inside the sandbox, for `javascript` code. */
  nodeInside: string,
  exec: LocalExec,
): SandboxHandle {
  const mounts: Mount[] = [
    { inside: LOCAL_WORKDIR, host: hostWorkingDirectory },
    { inside: '/tmp', host: tmp },
  ];
  return {
    id,
    workdir: LOCAL_WORKDIR,
    runCode: async (language, code, options) => {
      const prepared = await prepareCode(dirs.codeDirOf(id), language, code, nodeInside);
      try {
        const result = await exec(prepared.argv, options);
        return { ...result, ...(await collectImages(tmp)) };
      } finally {
        await prepared.cleanup();
      }
    },
    runCommand: async (command, options) => ({
      ...(await exec(['/bin/bash', '-c', command], options)),
      images: [],
    }),
    ...hostFiles(mounts, LOCAL_WORKDIR),
  };
}

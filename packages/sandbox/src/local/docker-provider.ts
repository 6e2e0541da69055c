import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CappedOutput } from '../capped-output.js';
import {
  type ExecOptions,
  type ExecResult,
  type SandboxHandle,
  type SandboxListing,
  type SandboxMetadata,
  type SandboxProvider,
  type SandboxSpec,
} from '../sandbox.js';
import {
  CALL_MARKER,
  CONTAINER_ENV,
  containerSpec,
  KILL_LEFTOVERS,
  LABEL,
  metadataOf,
  mountedAt,
  MOUNT_IDENTITY,
  mountRefusal,
  type ContainerInfo,
  type HelperOutput,
  type ContainerSettings,
} from './docker-container.js';
import { DockerEngine, engineError } from './docker-engine.js';
import { LOCAL_CODE_DIR } from './host-mounted.js';
import {
  DEFAULT_LOCAL_LIMITS,
  LOCAL_WORKDIR,
  LocalStateDirs,
  localHandle,
  newSandboxId,
  type LocalLimits,
} from './local-sandbox.js';
import { linkFreeDir, pinDir, removeDirNoFollow } from './no-follow.js';

export { IDLE_WATCHDOG, KILL_LEFTOVERS } from './docker-container.js';

export interface DockerOptions {
  /** Where each sandbox keeps its own `/tmp` on the host (mounted into its container). */
  readonly stateDir: string;
  /** `DOCKER_HOST`: `unix:///var/run/docker.sock` or `tcp://host:port`. */
  readonly host: string;
  /** The image containers run: bash, coreutils, python3 (matplotlib for figures), node. */
  readonly image: string;
  /** Give containers a network (`bridge`). @default false (`none`) */
  readonly network?: boolean;
  readonly limits?: Partial<LocalLimits>;
  /** CPUs a container may use. @default 1 */
  readonly cpus?: number;
  /** `uid:gid` code runs as. @default the service's own */
  readonly user?: string;
  /**
   * A container with no call for this long stops itself (its main process exits): the safety
   * net under the worker's sweep for when no worker runs. `SANDBOX_IDLE_TIMEOUT_MS`.
   * @default 600 000 (10 min)
   */
  readonly idleStopMs?: number;
  /** Where what cannot be answered to a call is told (a refused container that would not stop). */
  readonly logger?: SandboxLogger;
}

/** The part of the service's logger the adapter uses. @default `console.warn` */
export interface SandboxLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * Local sandboxes in containers, through the Docker Engine API (`SANDBOX_LOCAL_RUNTIME=docker`;
 * Podman's compatible API works the same): one container per session sandbox, named by the
 * sandbox id, idling on a watchdog that stops it after `idleStopMs` without a call, each call an
 * exec in it whose leftover processes are killed when it ends. Like bubblewrap sandboxes the
 * working directory is mounted at `/workspace` and the sandbox's own `/tmp` from `stateDir`, so
 * files, code files and figures are handled on the host; the container adds a read-only root, no
 * network (unless configured), all capabilities dropped, `no-new-privileges`, an init, and
 * limits on memory, CPUs, processes, CPU time and file size. Paused means stopped: no process,
 * nothing billed; a later call starts it again.
 */
export class DockerSandboxProvider implements SandboxProvider {
  readonly name = 'docker';
  readonly mode = 'local' as const;
  readonly workdir = LOCAL_WORKDIR;
  private readonly engine: DockerEngine;
  private readonly dirs: LocalStateDirs;
  private readonly container: ContainerSettings;
  private readonly logger: SandboxLogger;

  constructor(options: DockerOptions) {
    this.engine = new DockerEngine(options.host);
    this.dirs = new LocalStateDirs(options.stateDir);
    this.logger = options.logger ?? { warn: (fields, message) => console.warn(message, fields) };
    this.container = {
      image: options.image,
      user:
        options.user ??
        (process.getuid
          ? `${process.getuid()}:${process.getgid?.() ?? process.getuid()}`
          : '65534'),
      network: options.network ?? false,
      cpus: options.cpus ?? 1,
      idleStopMs: options.idleStopMs ?? 600_000,
      limits: { ...DEFAULT_LOCAL_LIMITS, ...options.limits },
    };
  }

  async create(spec: SandboxSpec): Promise<SandboxHandle> {
    const id = newSandboxId();
    await mkdir(join(this.dirs.dirOf(id), 'tmp', 'outputs'), { recursive: true });
    await mkdir(this.dirs.codeDirOf(id), { recursive: true });
    const host = await this.dirs.workingDirectory(id, spec);
    await this.createContainer(id, spec.metadata, host);
    return this.handle(id, host);
  }

  /**
   * The sandbox again, started if stopped. A later run of the session may name another working
   * directory: mounts are fixed at creation, so the container is made again with the new one
   * (its `/tmp` lives on the host and stays).
   */
  async connect(id: string, spec?: SandboxSpec): Promise<SandboxHandle | undefined> {
    const found = await this.inspect(id);
    if (!found) return undefined;
    const current = mountedAt(found, LOCAL_WORKDIR);
    const wanted = spec?.hostWorkingDirectory
      ? await linkFreeDir(spec.hostWorkingDirectory, LOCAL_WORKDIR)
      : current;
    if (!wanted) return undefined;
    // A container made before code files came from the service's own read-only directory is
    // made again with it (its `/tmp` stays).
    const hasCodeDir = mountedAt(found, LOCAL_CODE_DIR) !== undefined;
    if ((spec && wanted !== current) || !hasCodeDir) {
      await mkdir(this.dirs.codeDirOf(id), { recursive: true });
      await this.removeContainer(id);
      await this.createContainer(id, spec?.metadata ?? metadataOf(found), wanted);
    } else if (!found.State.Running) {
      await this.start(id);
    }
    return this.handle(id, wanted);
  }

  async pause(id: string): Promise<void> {
    const { status, body } = await this.engine.json('POST', `/containers/${id}/stop?t=0`);
    // 304: already stopped; 404: gone. Both fine.
    if (status >= 400 && status !== 404) {
      throw engineError('stop the container', status, JSON.stringify(body));
    }
  }

  async destroy(id: string): Promise<void> {
    await this.removeContainer(id);
    // The user's working directory is theirs: only the sandbox's own state goes.
    await removeDirNoFollow(this.dirs.dirOf(id));
  }

  async list(deployment: string): Promise<SandboxListing[]> {
    const filters = encodeURIComponent(
      JSON.stringify({ label: [`${LABEL.deployment}=${deployment}`] }),
    );
    const { status, body } = await this.engine.json<
      Array<{ Names: string[]; Labels: Record<string, string>; Created: number; State: string }>
    >('GET', `/containers/json?all=true&filters=${filters}`);
    if (status !== 200 || !body) throw engineError('list containers', status, JSON.stringify(body));
    return body.map((c) => ({
      id: (c.Names[0] ?? '').replace(/^\//, ''),
      metadata: {
        userId: c.Labels[LABEL.userId],
        sessionId: c.Labels[LABEL.sessionId],
        deployment: c.Labels[LABEL.deployment],
      },
      startedAt: new Date(c.Created * 1000),
      // A stopped container is what `pause` leaves: the next call starts it again.
      state:
        c.State === 'running'
          ? 'running'
          : c.State === 'dead' || c.State === 'removing'
            ? 'stopped'
            : 'paused',
    }));
  }

  private handle(id: string, hostWorkingDirectory: string): SandboxHandle {
    const tmp = this.dirs.tmpOf(id);
    return localHandle(this.dirs, id, hostWorkingDirectory, tmp, 'node', (argv, options) =>
      this.exec(id, argv, options),
    );
  }

  /**
   * One call: an exec under `timeout` (a backstop two seconds past the deadline) that writes its
   * process group id to its `/tmp` (inside; the host never reads it); at the deadline or on
   * abort, a second exec kills that group (the engine has no call to kill an exec).
   */
  private async exec(
    id: string,
    argv: readonly string[],
    options: ExecOptions,
  ): Promise<Omit<ExecResult, 'images'>> {
    const call = randomUUID();
    const pgidFile = `/tmp/.call-${call}.pgid`;
    await mkdir(this.dirs.codeDirOf(id), { recursive: true });
    // Keeps the idle watchdog from stopping the container during the call.
    const active = join(this.dirs.codeDirOf(id), `${call}.active`);
    await writeFile(active, '');
    const backstop = String(Math.ceil(options.timeoutMs / 1000) + 2);
    let execId: string;
    try {
      execId = await this.createExec(
        id,
        [`${CALL_MARKER}=${call}`],
        [
          'timeout',
          '-s',
          'KILL',
          backstop,
          '/bin/bash',
          '-c',
          `read -r _ _ _ _ group _ < /proc/$$/stat; echo "$group" > ${pgidFile}; exec "$@"`,
          'sandbox',
          ...argv,
        ],
      );
    } catch (error) {
      await rm(active, { force: true });
      throw error;
    }
    const stdout = new CappedOutput(options.maxOutputBytes);
    const stderr = new CappedOutput(options.maxOutputBytes);
    let timedOut = false;
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      void this.run(id, [
        '/bin/bash',
        '-c',
        `kill -KILL -- "-$(cat ${pgidFile})" 2>/dev/null; true`,
      ]).catch(() => undefined);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', kill, { once: true });
    try {
      await this.engine.attachExec(execId, (stream, data) =>
        (stream === 'stderr' ? stderr : stdout).push(data),
      );
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', kill);
      // What the call left running (`nohup x &`, `setsid x`) would otherwise live on in the
      // container until it stops; a process that cleared its environment escapes this.
      await this.run(id, ['/bin/bash', '-c', KILL_LEFTOVERS, call]).catch(() => undefined);
      await rm(active, { force: true });
    }
    const { body } = await this.engine.json<{ ExitCode: number | null }>(
      'GET',
      `/exec/${execId}/json`,
    );
    return {
      stdout: stdout.text(),
      stderr: stderr.text(),
      exitCode: timedOut || killed ? null : (body?.ExitCode ?? null),
      timedOut,
      truncated: stdout.cut || stderr.cut,
    };
  }

  /** Runs a short helper command in the container and waits for it (never starts a stopped one). */
  private async run(id: string, cmd: string[]): Promise<void> {
    await this.engine.attachExec(await this.createExec(id, [], cmd, false), () => undefined);
  }

  private async createExec(
    id: string,
    env: readonly string[],
    cmd: readonly string[],
    startIfStopped = true,
  ): Promise<string> {
    const { status, body } = await this.engine.json<{ Id: string; message?: string }>(
      'POST',
      `/containers/${id}/exec`,
      {
        AttachStdout: true,
        AttachStderr: true,
        Cmd: cmd,
        WorkingDir: LOCAL_WORKDIR,
        User: this.container.user,
        Env: [...CONTAINER_ENV, ...env],
      },
    );
    if (status === 409 && startIfStopped) {
      // Stopped meanwhile (the sweep paused it, or it stopped itself when idle): start it and
      // try once more.
      await this.start(id);
      return this.createExec(id, env, cmd);
    }
    if (status !== 201 || !body)
      throw engineError('run in the container', status, JSON.stringify(body));
    return body.Id;
  }

  private async createContainer(
    id: string,
    metadata: SandboxMetadata,
    hostWorkingDirectory: string,
  ): Promise<void> {
    const { status, body } = await this.engine.json(
      'POST',
      `/containers/create?name=${id}`,
      containerSpec(this.container, metadata, {
        workspace: hostWorkingDirectory,
        tmp: join(this.dirs.dirOf(id), 'tmp'),
        code: this.dirs.codeDirOf(id),
      }),
    );
    if (status !== 201) throw engineError('create the container', status, JSON.stringify(body));
    await this.start(id);
  }

  /**
   * Starts the container, which is when the engine mounts the working directory, by its path: a
   * directory swapped for a link since it was checked would be followed. So the directory is
   * pinned first (opened from `/` with no link followed: a link there now is refused), and once
   * the container runs, before anything else runs in it, the directory it mounted is compared
   * with the pinned one (device and inode, which the held descriptor keeps from being reused):
   * a container that mounted anything else is stopped and the call refused. What runs in the
   * container meanwhile is its idle watchdog, never the sandbox's code.
   */
  private async start(id: string): Promise<void> {
    const found = await this.inspect(id);
    const mounted = found && mountedAt(found, LOCAL_WORKDIR);
    const pinned = mounted ? await pinDir(mounted, LOCAL_WORKDIR) : undefined;
    try {
      const { status, body } = await this.engine.json('POST', `/containers/${id}/start`);
      if (status !== 204 && status !== 304) {
        throw engineError('start the container', status, JSON.stringify(body));
      }
      if (!pinned) return;
      const refused = mountRefusal(
        await this.output(id, MOUNT_IDENTITY).catch((error: unknown) => ({ error })),
        pinned.identity,
      );
      if (refused) {
        // Not thrown: the refusal is the call's answer (the container runs its watchdog only).
        await this.pause(id).catch((error: unknown) =>
          this.logger.warn(
            { code: 'sandbox_stop_failed', sandboxId: id, err: String(error) },
            'could not stop a container whose working directory mount was refused',
          ),
        );
        throw refused;
      }
    } finally {
      await pinned?.handle.close();
    }
  }

  /** What a short helper command prints, and its exit code (never starts a stopped container). */
  private async output(id: string, cmd: readonly string[]): Promise<HelperOutput> {
    const stdout = new CappedOutput(4096);
    const stderr = new CappedOutput(4096);
    const execId = await this.createExec(id, [], cmd, false);
    await this.engine.attachExec(execId, (stream, data) =>
      (stream === 'stderr' ? stderr : stdout).push(data),
    );
    const { body } = await this.engine.json<{ ExitCode: number | null }>(
      'GET',
      `/exec/${execId}/json`,
    );
    return { stdout: stdout.text(), stderr: stderr.text(), exitCode: body?.ExitCode ?? null };
  }

  private async inspect(id: string): Promise<ContainerInfo | undefined> {
    this.dirs.dirOf(id);
    const { status, body } = await this.engine.json<ContainerInfo>('GET', `/containers/${id}/json`);
    if (status === 404) return undefined;
    if (status !== 200 || !body)
      throw engineError('inspect the container', status, JSON.stringify(body));
    return body;
  }

  private async removeContainer(id: string): Promise<void> {
    const { status, body } = await this.engine.json('DELETE', `/containers/${id}?force=true`);
    if (status >= 400 && status !== 404) {
      throw engineError('remove the container', status, JSON.stringify(body));
    }
  }
}

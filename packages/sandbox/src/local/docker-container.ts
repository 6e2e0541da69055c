import { LOCAL_CODE_DIR } from './host-mounted.js';
import { LOCAL_ENV, LOCAL_WORKDIR, type LocalLimits } from './local-sandbox.js';
import { notTheDirectory } from './no-follow.js';
import { SandboxError, type SandboxMetadata } from '../sandbox.js';

/** What a sandbox's container is: its labels, environment, main process and `create` body. */

/** Labels on every container, so the reaper finds a deployment's sandboxes. */
export const LABEL = {
  userId: 'agent-backend.user',
  sessionId: 'agent-backend.session',
  deployment: 'agent-backend.deployment',
} as const satisfies Record<keyof SandboxMetadata, string>;

/** `LOCAL_ENV` as the engine takes it. */
export const CONTAINER_ENV = Object.entries(LOCAL_ENV).map(([name, value]) => `${name}=${value}`);

/** Every process of a call carries this variable, so what it left behind can be found. */
export const CALL_MARKER = 'AGENT_SANDBOX_CALL';

/**
 * The container's main process: sleeps, and exits (stopping the container) once the code
 * directory (`$1`, read-only inside, written by the service only) has not changed for `$0`
 * seconds and no call is running (the service writes a `<call>.active` file there before each
 * call and removes it after, which also moves the directory's mtime).
 */
export const IDLE_WATCHDOG = [
  'mkdir -p "$1"',
  'while sleep 1; do',
  '  compgen -G "$1/*.active" > /dev/null && continue',
  '  idle=$(( $(date +%s) - $(stat -c %Y "$1") ))',
  '  [ "$idle" -ge "$0" ] && exit 0',
  'done',
].join('\n');

/**
 * Kills every process whose environment has `CALL_MARKER=$0` (a call's leftovers: `nohup`,
 * `setsid`, `&` children), a few passes in case one forks meanwhile. It reads `/proc/<pid>/environ`,
 * so it never touches a process of another call or the container's own.
 */
export const KILL_LEFTOVERS = [
  'for pass in 1 2 3 4 5; do',
  '  found=',
  '  for e in /proc/[0-9]*/environ; do',
  '    while IFS= read -r -d "" v; do',
  '      if [ "$v" = "' +
    CALL_MARKER +
    '=$0" ]; then p=${e%/environ}; kill -KILL "${p#/proc/}" 2>/dev/null; found=1; break; fi',
  '    done < "$e" 2>/dev/null',
  '  done',
  '  [ -z "$found" ] && break',
  'done',
  // The call's process group file, written inside by the call (the host never touches /tmp).
  'rm -f "/tmp/.call-$0.pgid"',
  'true',
].join('\n');

export interface ContainerInfo {
  Name: string;
  State: { Running: boolean };
  Config?: { Labels?: Record<string, string> };
  HostConfig: { Binds?: string[]; Mounts?: BindMount[] };
}

/** One of `HostConfig.Mounts`: a host directory bound into the container. */
export interface BindMount {
  readonly Type: 'bind';
  readonly Source: string;
  readonly Target: string;
  readonly ReadOnly?: boolean;
}

/**
 * The host directory a container has at `target`: from `HostConfig.Mounts` (how containers are
 * made now), or from `Binds` (`<host>:<inside>:<mode>`, containers made by versions before).
 */
export function mountedAt(found: ContainerInfo, target: string): string | undefined {
  const mount = found.HostConfig.Mounts?.find((m) => m.Type === 'bind' && m.Target === target);
  if (mount) return mount.Source;
  return found.HostConfig.Binds?.find((b) => b.split(':')[1] === target)?.split(':')[0];
}

/** The metadata a container was labelled with. */
export function metadataOf(found: ContainerInfo): SandboxMetadata {
  const labels = found.Config?.Labels ?? {};
  return {
    userId: labels[LABEL.userId] ?? '',
    sessionId: labels[LABEL.sessionId] ?? '',
    deployment: labels[LABEL.deployment] ?? '',
  };
}

/** How a sandbox's container is made. */
export interface ContainerSettings {
  readonly image: string;
  readonly user: string;
  readonly network: boolean;
  readonly cpus: number;
  readonly idleStopMs: number;
  readonly limits: LocalLimits;
}

/**
 * The Engine API's `POST /containers/create` body of a sandbox: its working directory, its own
 * `/tmp` and the service's code directory (read-only) mounted; a read-only root, no network
 * (unless configured), all capabilities dropped, `no-new-privileges`, an init, and the limits.
 */
export function containerSpec(
  settings: ContainerSettings,
  metadata: SandboxMetadata,
  binds: { readonly workspace: string; readonly tmp: string; readonly code: string },
): Record<string, unknown> {
  const { limits, network } = settings;
  return {
    Image: settings.image,
    Cmd: [
      '/bin/bash',
      '-c',
      IDLE_WATCHDOG,
      String(Math.ceil(settings.idleStopMs / 1000)),
      LOCAL_CODE_DIR,
    ],
    WorkingDir: LOCAL_WORKDIR,
    User: settings.user,
    Env: CONTAINER_ENV,
    Hostname: 'sandbox',
    NetworkDisabled: !network,
    Labels: {
      [LABEL.userId]: metadata.userId,
      [LABEL.sessionId]: metadata.sessionId,
      [LABEL.deployment]: metadata.deployment,
    },
    HostConfig: {
      // `Mounts`, not `Binds`: the engine refuses a bind whose source is missing instead of
      // creating it (as root, wherever a link on its path leads), and a `:` in a path is a path.
      Mounts: [
        { Type: 'bind', Source: binds.workspace, Target: LOCAL_WORKDIR, ReadOnly: false },
        { Type: 'bind', Source: binds.tmp, Target: '/tmp', ReadOnly: false },
        { Type: 'bind', Source: binds.code, Target: LOCAL_CODE_DIR, ReadOnly: true },
      ] satisfies BindMount[],
      NetworkMode: network ? 'bridge' : 'none',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Init: true,
      // The container's memory covers all its processes and its /dev/shm; the RAM disk is
      // kept small as in bubblewrap.
      Memory: limits.memoryBytes,
      ShmSize: limits.shmBytes,
      NanoCpus: Math.round(settings.cpus * 1e9),
      PidsLimit: limits.maxProcesses,
      Ulimits: [
        { Name: 'cpu', Soft: limits.cpuSeconds, Hard: limits.cpuSeconds },
        { Name: 'fsize', Soft: limits.maxFileBytes, Hard: limits.maxFileBytes },
      ],
    },
  };
}

/** What a helper exec printed, and its exit code (`null`: the engine reported none). */
export interface HelperOutput {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
}

/** The helper that prints the device and inode of the directory mounted at `/workspace`. */
export const MOUNT_IDENTITY = ['stat', '-c', '%d:%i', LOCAL_WORKDIR] as const;

/**
 * Why a started container's `/workspace` is refused, given what {@link MOUNT_IDENTITY} gave (or
 * the error of its exec) and the identity of the directory the adapter pinned; `undefined` when
 * it mounted that very directory. A helper that failed (no `stat` in the image, an exec the
 * engine refused) is not a swapped folder, but leaves the mount unverified: refused too, saying
 * so.
 */
export function mountRefusal(
  seen: HelperOutput | { error: unknown },
  identity: string,
): SandboxError | undefined {
  if ('error' in seen || seen.exitCode !== 0) {
    const how =
      'error' in seen
        ? `could not run: ${String(seen.error)}`
        : seen.exitCode === null
          ? 'reported no exit code'
          : `exited with ${seen.exitCode}`;
    const said = 'error' in seen ? '' : (seen.stderr.trim() || seen.stdout.trim()).slice(0, 300);
    return new SandboxError(
      'unavailable',
      `cannot verify the mount of ${LOCAL_WORKDIR} in the container (\`stat\` ${how}` +
        `${said ? `: ${said}` : ''}): nothing ran; the image (SANDBOX_DOCKER_IMAGE) needs ` +
        'coreutils',
      'error' in seen ? { cause: seen.error } : undefined,
    );
  }
  if (seen.stdout.trim() !== identity) {
    return new SandboxError('unavailable', notTheDirectory(LOCAL_WORKDIR));
  }
  return undefined;
}

import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How the number of processes of one sandbox call is bounded (a fork bomb must not take the
 * host's process table). RLIMIT_NPROC does not bind a process whose user outside the sandbox is
 * root, whatever its user inside; a `pids` cgroup binds everyone. So: a `pids` cgroup per call
 * where the service may create one (cgroup v1 `pids` hierarchy, or v2 with the `pids`
 * controller), else RLIMIT_NPROC when the service does not run as root, else nothing that
 * holds, and the provider refuses to run code ({@link processLimitMode}).
 */
export type ProcessLimitMode =
  | { readonly kind: 'cgroup'; readonly parent: string; readonly version: 1 | 2 }
  | { readonly kind: 'rlimit' }
  | { readonly kind: 'none'; readonly why: string };

const V1 = '/sys/fs/cgroup/pids';
const V2 = '/sys/fs/cgroup';
const GROUP = 'agent-sandbox';

function tryV1(): ProcessLimitMode | undefined {
  if (!existsSync(join(V1, 'cgroup.procs'))) return undefined;
  try {
    const parent = join(V1, GROUP);
    mkdirSync(parent, { recursive: true });
    return { kind: 'cgroup', parent, version: 1 };
  } catch {
    return undefined;
  }
}

function tryV2(): ProcessLimitMode | undefined {
  try {
    const controllers = readFileSync(join(V2, 'cgroup.controllers'), 'utf8');
    if (!controllers.split(/\s+/).includes('pids')) return undefined;
    const parent = join(V2, GROUP);
    writeFileSync(join(V2, 'cgroup.subtree_control'), '+pids');
    mkdirSync(parent, { recursive: true });
    writeFileSync(join(parent, 'cgroup.subtree_control'), '+pids');
    return { kind: 'cgroup', parent, version: 2 };
  } catch {
    return undefined;
  }
}

let detected: ProcessLimitMode | undefined;

/** The mode of this host, detected once per process. */
export function processLimitMode(): ProcessLimitMode {
  detected ??=
    tryV1() ??
    tryV2() ??
    (process.getuid?.() === 0
      ? {
          kind: 'none',
          why:
            'the service runs as root and cannot create a pids cgroup, so a process-count limit ' +
            'would not hold (give it a writable pids cgroup, or run it as another user)',
        }
      : { kind: 'rlimit' });
  return detected;
}

/** A `pids` cgroup for one call: processes moved into it, and their descendants, are bounded. */
export class CallCgroup {
  readonly path: string;

  constructor(
    mode: Extract<ProcessLimitMode, { kind: 'cgroup' }>,
    name: string,
    maxProcesses: number,
  ) {
    this.path = join(mode.parent, name);
    mkdirSync(this.path);
    writeFileSync(join(this.path, 'pids.max'), String(maxProcesses));
  }

  /** Kills every process left in the group (best effort), then removes it. */
  remove(): void {
    for (let attempt = 0; attempt < 20; attempt++) {
      let pids: number[] = [];
      try {
        pids = readFileSync(join(this.path, 'cgroup.procs'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map(Number);
      } catch {
        return;
      }
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      try {
        rmdirSync(this.path);
        return;
      } catch {
        // processes still exiting: try again
      }
    }
  }
}

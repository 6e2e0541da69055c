import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How the processes and memory of one sandbox call are bounded together (a fork bomb must not
 * take the host's process table, nor many processes or a RAM disk the host's memory).
 * RLIMIT_NPROC does not bind a process whose user outside the sandbox is root, whatever its user
 * inside; a `pids` cgroup binds everyone. So: a cgroup per call where the service may create one
 * (cgroup v1 `pids` hierarchy, or v2 with the `pids` controller), with a memory limit for the
 * whole call when the `memory` controller is there too; else RLIMIT_NPROC when the service does
 * not run as root, else nothing that holds, and the provider refuses to run code
 * ({@link processLimitMode}).
 */
export type ProcessLimitMode =
  | {
      readonly kind: 'cgroup';
      readonly version: 1 | 2;
      /** The parent of the calls' `pids` groups. */
      readonly parent: string;
      /** The parent of the calls' memory groups (v1: its own hierarchy; v2: `parent`). */
      readonly memoryParent?: string;
    }
  | { readonly kind: 'rlimit' }
  | { readonly kind: 'none'; readonly why: string };

const V1 = '/sys/fs/cgroup';
const V2 = '/sys/fs/cgroup';
const GROUP = 'agent-sandbox';

/** A parent group of ours in the v1 hierarchy `controller`, or nothing when it cannot be made. */
function v1Parent(controller: string): string | undefined {
  if (!existsSync(join(V1, controller, 'cgroup.procs'))) return undefined;
  try {
    const parent = join(V1, controller, GROUP);
    mkdirSync(parent, { recursive: true });
    return parent;
  } catch {
    return undefined;
  }
}

function tryV1(): ProcessLimitMode | undefined {
  const parent = v1Parent('pids');
  if (!parent) return undefined;
  const memoryParent = v1Parent('memory');
  return { kind: 'cgroup', version: 1, parent, ...(memoryParent ? { memoryParent } : {}) };
}

function tryV2(): ProcessLimitMode | undefined {
  try {
    const controllers = readFileSync(join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/);
    if (!controllers.includes('pids')) return undefined;
    const parent = join(V2, GROUP);
    writeFileSync(join(V2, 'cgroup.subtree_control'), '+pids');
    mkdirSync(parent, { recursive: true });
    writeFileSync(join(parent, 'cgroup.subtree_control'), '+pids');
    let memory = false;
    if (controllers.includes('memory')) {
      try {
        writeFileSync(join(V2, 'cgroup.subtree_control'), '+memory');
        writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
        memory = true;
      } catch {
        // Not delegated to us: processes are still bounded, memory per process only.
      }
    }
    return { kind: 'cgroup', version: 2, parent, ...(memory ? { memoryParent: parent } : {}) };
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process ids in the group at `dir` (empty when it is gone). */
function procsOf(dir: string): number[] {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * The cgroup(s) of one call: processes moved into them, and their descendants, are bounded in
 * number and, when the memory controller is available, in memory all together. Always
 * {@link remove}d after the call.
 */
export class CallCgroup {
  /** Every group of the call (v1: one per hierarchy; v2: one). */
  readonly dirs: readonly string[];
  /** Whether the call's total memory is bounded (a memory group was made). */
  readonly memoryBounded: boolean;

  constructor(
    private readonly mode: Extract<ProcessLimitMode, { kind: 'cgroup' }>,
    name: string,
    limits: { readonly maxProcesses: number; readonly memoryBytes: number },
  ) {
    const pids = join(mode.parent, name);
    const memory = mode.memoryParent && join(mode.memoryParent, name);
    const dirs = memory && memory !== pids ? [pids, memory] : [pids];
    const made: string[] = [];
    try {
      for (const dir of dirs) {
        mkdirSync(dir);
        made.push(dir);
      }
      writeFileSync(join(pids, 'pids.max'), String(limits.maxProcesses));
      if (memory) {
        if (mode.version === 2) {
          writeFileSync(join(memory, 'memory.max'), String(limits.memoryBytes));
          // Swap would let a call hold more than its memory: none (absent without swap support).
          if (existsSync(join(memory, 'memory.swap.max'))) {
            writeFileSync(join(memory, 'memory.swap.max'), '0');
          }
        } else {
          writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          if (existsSync(join(memory, 'memory.memsw.limit_in_bytes'))) {
            writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
          }
        }
      }
    } catch (error) {
      for (const dir of made.reverse()) {
        try {
          rmdirSync(dir);
        } catch {
          // nothing ran in it; at worst an empty group stays
        }
      }
      throw error;
    }
    this.dirs = dirs;
    this.memoryBounded = memory !== undefined;
  }

  /** The `cgroup.procs` files a process writes its pid to, to join the call's groups. */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /**
   * Kills every process left in the groups, waits until they are empty, and removes them,
   * trying again until done: a call killed at its deadline leaves processes still exiting (the
   * sandbox's PID namespace dies with its init, a moment after the kill), and a group that still
   * holds one cannot be removed. Answers whether they are gone.
   */
  async remove(): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      const left = this.dirs.filter((dir) => existsSync(dir));
      if (left.length === 0) return true;
      for (const dir of left) this.killAll(dir);
      for (const dir of left) {
        if (procsOf(dir).length > 0) continue;
        try {
          rmdirSync(dir);
        } catch {
          // a process not yet reaped: next round
        }
      }
      // A process that will not die (stuck in the kernel) keeps its group; after about a minute
      // of trying it is left, under our parent group, rather than holding the call's answer.
      if (attempt >= 1_200) return false;
      await sleep(attempt < 10 ? 5 : 50);
    }
  }

  private killAll(dir: string): void {
    if (this.mode.version === 2 && existsSync(join(dir, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dir, 'cgroup.kill'), '1');
        return;
      } catch {
        // fall back to killing each
      }
    }
    for (const pid of procsOf(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

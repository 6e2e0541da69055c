/**
 * What the local sandbox suites share: whether bubblewrap can run on this host, the folders of
 * a suite laid out as the service lays them out, users' working directories resolved as invoke
 * resolves them, and the code tools on a sandbox as a run gets them.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolContext, ToolOutput } from '@agent-backend/agent-runtime';
import { resolveWorkingDirectory, sandboxTools, type SandboxHandle } from '@agent-backend/sandbox';

/** Why bubblewrap cannot run on this host (no user namespaces, not installed), or undefined. */
export const bwrapUnusable: string | undefined = (() => {
  try {
    execFileSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', '--', 'true'], {
      stdio: 'pipe',
    });
    return undefined;
  } catch (error) {
    return `bwrap cannot run on this host: ${(error as Error).message}`;
  }
})();

/**
 * Whether the suite named `suite` must be skipped because bubblewrap cannot run here (saying so
 * on the console): `describe.skipIf(withoutBwrap('…'))`.
 */
export function withoutBwrap(suite: string): boolean {
  if (bwrapUnusable) console.warn(`${suite} skipped: ${bwrapUnusable}`);
  return bwrapUnusable !== undefined;
}

/** Call limits the suites run code with. */
export const LIMITS = { timeoutMs: 30_000, maxOutputBytes: 64 * 1024 };

export interface SandboxFolders {
  /** A fresh folder of the suite's own, outside every sandbox. */
  readonly root: string;
  /** `SANDBOX_STATE_DIR`. */
  readonly stateDir: string;
  /** `SANDBOX_LOCAL_ROOT`. */
  readonly usersRoot: string;
  /** A value planted on the host that no sandbox may read. */
  readonly secret: string;
}

/** A suite's folders under a fresh temporary one named after `label`. */
export function sandboxFolders(label: string): SandboxFolders {
  const root = mkdtempSync(join(tmpdir(), `${label}-`));
  return {
    root,
    stateDir: join(root, 'state'),
    usersRoot: join(root, 'users'),
    secret: `host-secret-${process.pid}-${Date.now()}`,
  };
}

/**
 * The folder `name` of `user` under `usersRoot`, made if missing, as invoke resolves a
 * `working_directory` for that user (the real path, checked to be the user's).
 */
export function userFolder(usersRoot: string, user: string, name: string): string {
  mkdirSync(join(usersRoot, user, name), { recursive: true });
  const resolved = resolveWorkingDirectory(usersRoot, user, name);
  if (!('dir' in resolved)) throw new Error(resolved.refused);
  return resolved.dir;
}

/** The code tools on `sandbox`, as a run gets them; a call answers what `tool_result` carries. */
export function toolsOn(
  sandbox: SandboxHandle,
  limits: { timeoutMs: number; maxOutputBytes: number },
  userId = 'mallory',
): (name: string, args: Record<string, unknown>) => Promise<ToolOutput> {
  const tools = sandboxTools(
    { sandbox: async () => sandbox, touch: async () => undefined },
    { timeoutMs: limits.timeoutMs, maxOutputBytes: limits.maxOutputBytes, maxReadBytes: 65_536 },
  );
  const context = {
    userId,
    sessionId: 's',
    runId: 'r',
    mode: 'agent',
    signal: new AbortController().signal,
    emit: () => undefined,
  } as unknown as ToolContext;
  return (name, args) => tools.find((t) => t.name === name)!.execute(args, context);
}

import { realpathSync } from 'node:fs';
import { posix, relative, resolve, sep } from 'node:path';
import { SandboxError } from '../sandbox.js';

/** A directory of the sandbox's file tree and the host directory behind it. */
export interface Mount {
  readonly inside: string;
  readonly host: string;
}

/** Whether `path` is `root` or inside it (both absolute, normalized). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== '..');
}

/**
 * The real path of `path`, following symlinks as far as the path exists (a file about to be
 * written does not yet; its deepest existing ancestor is resolved and the rest appended).
 */
function realpathOfExisting(path: string): string {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      return resolve(realpathSync(current), ...missing.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      const parent = resolve(current, '..');
      if (parent === current) return path;
      missing.push(current.slice(parent.length + 1));
      current = parent;
    }
  }
}

/**
 * The host path behind a sandbox path (relative paths start at `workdir`), refused with
 * `path_outside` when it leaves every mount, by `..` or by a symlink pointing out of the mount:
 * the host side of file tools must never reach what the sandbox's own processes cannot.
 */
export function hostPathOf(path: string, workdir: string, mounts: readonly Mount[]): string {
  const inside = posix.resolve(workdir, path);
  for (const mount of mounts) {
    if (!(inside === mount.inside || inside.startsWith(`${mount.inside}/`))) continue;
    const hostRoot = realpathSync(mount.host);
    const host = resolve(hostRoot, `.${inside.slice(mount.inside.length)}`);
    if (!isWithin(hostRoot, host) || !isWithin(hostRoot, realpathOfExisting(host))) break;
    return host;
  }
  throw new SandboxError(
    'path_outside',
    `${path} is outside the sandbox's files (${mounts.map((m) => m.inside).join(', ')})`,
  );
}

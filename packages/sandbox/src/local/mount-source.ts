import { readFileSync, realpathSync } from 'node:fs';
import { posix } from 'node:path';

/**
 * What a sandbox's `/proc/self/mountinfo` shows of a host directory bound into it. The kernel
 * prints a bind mount's source as the directory's path within its own file system (the mount's
 * "root" field), whatever path or descriptor it was bound through: a directory on the host's root
 * file system shows its whole host path; one on a file system of its own (a volume) shows only
 * its path inside that volume. This reads the service's own mount table to say which.
 */

/** The path `dir` (absolute) shows as in a sandbox's mountinfo when bound into it. */
export function shownInMountinfo(dir: string, mountinfo = '/proc/self/mountinfo'): string {
  return mountSource(dir, mountinfo).shown;
}

/**
 * The path `dir` shows in a sandbox's mountinfo when that names more than a path inside a file
 * system of `dir`'s own, else `undefined`. `undefined` when `dir` lies on a file system mounted
 * whole (its root, `/`) anywhere but at `/`: a volume such as a tmpfs or a disk of its own. A
 * path otherwise: on the service's root file system, its own path; behind a bind mount of a
 * folder (the service in a container run with `-v /srv/data:/data`, a Docker named volume, a
 * Kubernetes `hostPath` or `emptyDir`), the folder's path on the file system it was bound from,
 * which is the host's path and differs from the one the service sees.
 */
export function exposedInMountinfo(
  dir: string,
  mountinfo = '/proc/self/mountinfo',
): string | undefined {
  const { shown, mount } = mountSource(dir, mountinfo);
  if (mount && mount.root === '/' && mount.point !== '/') return undefined;
  return shown;
}

function mountSource(
  dir: string,
  mountinfo: string,
): { shown: string; mount: { point: string; root: string } | undefined } {
  const real = realpathSync(dir);
  let best: { point: string; root: string } | undefined;
  for (const line of readFileSync(mountinfo, 'utf8').split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5) continue;
    const root = unescape(fields[3]!);
    const point = unescape(fields[4]!);
    // The last mount on the longest mount point holding the directory is the one it is on.
    if (isWithin(point, real) && (!best || point.length >= best.point.length)) {
      best = { point, root };
    }
  }
  if (!best) return { shown: real, mount: undefined };
  return { shown: posix.join(best.root, posix.relative(best.point, real)), mount: best };
}

function isWithin(point: string, path: string): boolean {
  return point === '/' || path === point || path.startsWith(`${point}/`);
}

/** mountinfo's octal escapes (`\040` for a space, and so on). */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(parseInt(octal, 8)),
  );
}

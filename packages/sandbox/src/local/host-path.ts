import { relative, sep } from 'node:path';

/**
 * A directory of the sandbox's file tree and the host directory behind it: `host` is a real
 * path (no link in it), taken when the sandbox was made or reconnected.
 */
export interface Mount {
  readonly inside: string;
  readonly host: string;
}

/** Whether `path` is `root` or inside it (both absolute, normalized). */
export function isWithin(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== '..');
}

import type { SandboxFileEntry, SandboxFileListing } from './sandbox.js';

/**
 * A walk's entries as {@link SandboxFileListing}: sorted by path in plain code-unit order (no
 * locale collation: names are the sandbox's, and the order must not depend on the host's ICU),
 * marked `cut` when the walk stopped early.
 */
export function listingOf(entries: SandboxFileEntry[], cut: boolean): SandboxFileListing {
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return cut ? Object.assign(entries, { cut: true as const }) : entries;
}

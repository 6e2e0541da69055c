import { readFileSync } from 'node:fs';

/**
 * The version and commit of the running code for `agent_backend_build_info`: the version of the
 * repository's root package.json (the image keeps it at /app/package.json), the commit from
 * `BUILD_COMMIT` (set when the image is built). `unknown` for what cannot be read.
 */
export function buildInfo(commit: string | undefined): { version: string; commit: string } {
  let version = 'unknown';
  try {
    // packages/runtime/dist/build-info.js → the repository root.
    const root = new URL('../../../package.json', import.meta.url);
    version = (JSON.parse(readFileSync(root, 'utf8')) as { version?: string }).version ?? version;
  } catch {
    // A packaging without the root manifest: the version stays unknown.
  }
  return { version, commit: commit ?? 'unknown' };
}

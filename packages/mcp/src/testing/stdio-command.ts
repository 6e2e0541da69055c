import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

/** The tsx loader as a `file:` URL, so the command works from any working directory. */
export const TSX_LOADER = pathToFileURL(require.resolve('tsx')).href;

/** Absolute path of the stdio fixture server. */
export const FIXTURE_STDIO = fileURLToPath(new URL('./fixture-stdio.ts', import.meta.url));

/** The allowlist entry that pins the fixture: node, the loader and the script, nothing more. */
export const FIXTURE_STDIO_ENTRY = `${process.execPath} --import ${TSX_LOADER} ${FIXTURE_STDIO}`;

/** A command line running the fixture with `flags` (see fixture-stdio.ts). */
export function fixtureStdioCommand(...flags: string[]): string {
  return [FIXTURE_STDIO_ENTRY, ...flags].join(' ');
}

/** The installed `@modelcontextprotocol/server-everything` entry, run with `node`. */
export const SERVER_EVERYTHING = fileURLToPath(
  new URL(
    '../../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
    import.meta.url,
  ),
);

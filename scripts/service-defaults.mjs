// What every service process starts with for a smaller resident footprint (docs/deployment.md,
// "Memory"). scripts/bootstrap.mjs applies it to `npm start` and `npm run start:*`,
// bench/footprint.ts to what it measures; infra/Dockerfile sets the same in its ENV
// (tests/compose.test.ts checks they agree). An operator's own value of either wins.

/**
 * V8's young generation capped at 2 × 4 MB: its two semi-spaces otherwise grow to 16 MB each
 * while thousands of modules load at start, and stay committed when idle (~20 MB per isolate).
 */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=4'];

/**
 * glibc's malloc trim threshold fixed at its default (128 KB): setting it turns off the
 * threshold's dynamic growth, which kept tens of MB free but resident in each thread's arena
 * after V8's compiler freed hundreds of MB (PGlite's WebAssembly tier-up, ~80 MB in the
 * all-in-one).
 */
export const SERVICE_ENV = { MALLOC_TRIM_THRESHOLD_: '131072' };

/**
 * The flags to add for a process whose NODE_OPTIONS are `nodeOptions`: none it sets itself. A
 * flag on the command line overrides NODE_OPTIONS, and V8 reads `_` in a flag's name as `-`
 * (`--max_semi_space_size=16`), so both spellings count as the operator's own.
 */
export function serviceNodeFlags(nodeOptions = '') {
  const names = new Set(
    nodeOptions
      .split(/\s+/)
      .filter((option) => option.startsWith('--'))
      .map((option) => option.split('=')[0].replaceAll('_', '-')),
  );
  return SERVICE_NODE_FLAGS.filter((flag) => !names.has(flag.split('=')[0]));
}

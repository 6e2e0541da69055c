// Reads a Vitest log (`npm test` output) and prints the test files of a worker that died of a
// signal, space-separated, when that is the run's only failure: no failed file and no failed test
// in the summary. Exits 1 (prints nothing) otherwise. Used by .ci/run to retry such files once.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

// eslint-disable-next-line no-control-regex
const log = readFileSync(process.argv[2], 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
const crashes = [
  ...log.matchAll(
    /Worker exited unexpectedly with (?:exit code \d+ )?signal \w+ .*?while running test files? ([^\n]+)/g,
  ),
];
const summaries = log.split('\n').filter((line) => /^\s*(Test Files|Tests)\s/.test(line));
if (crashes.length === 0 || summaries.length === 0 || summaries.some((l) => /\bfailed\b/.test(l)))
  process.exit(1);
const files = new Set(
  crashes.flatMap((m) => m[1].split(', ').map((file) => relative(process.cwd(), file.trim()))),
);
console.log([...files].join(' '));

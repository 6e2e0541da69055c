/**
 * A newcomer's first start (goal <= 30 s with a warm pnpm store): `git clone` of
 * REPO into a temporary folder and `npm start` there with an empty DATA_DIR, until `/healthz`
 * answers; ROUNDS times for each template condition. "warm template" uses this user's PGlite
 * initdb template cache (as on any machine that started the service once); "cold template"
 * points XDG_CACHE_HOME at an empty folder, so the database is made by initdb (a machine's
 * very first start). Each round prints the time to healthy, the step lines' own times (install,
 * build, database, migrations) and the load average. Run it under the Node to measure (it is
 * the one put first on PATH for `npm start`), on a committed tree (the clone takes HEAD).
 *
 *   node --import tsx bench/first-start.ts
 *   REPO=/path/to/an/older/checkout node --import tsx bench/first-start.ts   # the "before" figure
 *
 * Env: REPO (default this repository), ROUNDS (default 3), CONDITIONS (default
 * `warm,cold`), DEADLINE_MS (default 300,000).
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, timeFirstStart } from '../packages/testing/src/index.js';
import { machineLine } from './support/processes.js';

const REPO = process.env.REPO ?? REPO_ROOT;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONDITIONS = (process.env.CONDITIONS ?? 'warm,cold').split(',');
const DEADLINE_MS = Number(process.env.DEADLINE_MS ?? 300_000);

/** The times the step lines report: `[bootstrap] build: ... 0.9 s`, `migrations: ... in 0.2 s`. */
function stepTimes(lines: readonly string[]): string {
  const found: string[] = [];
  for (const line of lines) {
    let text = line;
    try {
      text = (JSON.parse(line) as { msg?: string }).msg ?? line;
    } catch {
      // a bootstrap line, not JSON
    }
    const step = /^(?:\[bootstrap\] )?(install|build|database|migrations):.*?(\d+\.\d) s\b/.exec(
      text,
    );
    if (step) found.push(`${step[1]} ${step[2]} s`);
  }
  return found.join(', ');
}

console.log(`first start of a fresh clone of ${REPO}`);
console.log(machineLine());
for (const condition of CONDITIONS) {
  const env: Record<string, string> =
    condition === 'cold'
      ? { XDG_CACHE_HOME: mkdtempSync(join(tmpdir(), 'first-start-cache-')) }
      : {};
  for (let round = 1; round <= ROUNDS; round++) {
    const { healthyMs, stdout, stderr } = await timeFirstStart({
      repo: REPO,
      deadlineMs: DEADLINE_MS,
      env,
    });
    const healthy =
      healthyMs === undefined
        ? `not healthy in ${DEADLINE_MS} ms`
        : `${(healthyMs / 1000).toFixed(1)} s`;
    console.log(
      `${condition} template, round ${round}: healthy after ${healthy} (${stepTimes([...stderr, ...stdout])}); load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    // Each cold round starts from an empty cache again.
    if (condition === 'cold')
      env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'first-start-cache-'));
  }
}

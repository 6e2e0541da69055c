#!/usr/bin/env node
// Writes the figures table of docs/RELIABILITY.md from the fault suite's last run
// (artifacts/faults/*.json, written by `pnpm test:faults`; *.long.json by the long profile):
// `node scripts/faults-report.mjs [--profile long]` prints it, `--write` replaces the part of
// the page between that profile's two markers.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = join(root, 'artifacts', 'faults');
const page = join(root, 'docs', 'RELIABILITY.md');
const profileArg = process.argv.indexOf('--profile');
const profile = profileArg > 0 ? process.argv[profileArg + 1] : 'ci';
const tag = profile === 'ci' ? 'faults' : `faults-${profile}`;
const BEGIN = `<!-- ${tag}:begin (scripts/faults-report.mjs writes this part) -->`;
const END = `<!-- ${tag}:end -->`;

/** The order of the page: the fault suite's scenarios, Redis first, the soak last. */
const ORDER = [
  'redis-restart',
  'redis-client-kill',
  'redis-stall',
  'redis-drop',
  'redis-sentinel-failover',
  'redis-cluster-failover',
  'redis-cluster-queues-failover',
  'postgres-stall',
  'postgres-drop',
  'postgres-restart',
  'worker-sigkill',
  'slow-consumers',
  'soak',
];

if (!existsSync(dir)) {
  console.error('no artifacts/faults: run `pnpm test:faults` first');
  process.exit(1);
}
const reports = readdirSync(dir)
  .filter((f) =>
    profile === 'ci'
      ? f.endsWith('.json') && f.split('.').length === 2
      : f.endsWith(`.${profile}.json`),
  )
  .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')))
  // Only the tallies: the soak's samples (soak-samples*.json) are kept beside them.
  .filter((report) => ORDER.includes(report.fault))
  .sort((a, b) => ORDER.indexOf(a.fault) - ORDER.indexOf(b.fault));

const seconds = (ms) => (ms === null || ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);
const failedBy = (counts) =>
  Object.entries(counts.failedBy)
    .map(([code, n]) => `${n} \`${code}\``)
    .join(', ');

const lines = [];
const first = reports[0];
lines.push(
  `Run of ${first?.at.slice(0, 10) ?? '—'}, commit \`${first?.commit ?? '—'}\`, profile \`${first?.profile ?? '—'}\`, on ${first?.machine ?? '—'}.`,
  '',
  '| fault | traffic | made | succeeded | failed (clear error) | hung | lost | doubled | recovered in |',
  '| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |',
);
for (const report of reports) {
  let firstRow = true;
  for (const [kind, c] of Object.entries(report.kinds)) {
    const failed = c.failed + c.unclear;
    lines.push(
      `| ${firstRow ? `**${report.fault}**` : ''} | ${kind} | ${c.made} | ${c.succeeded} | ${failed}${failed ? ` (${failedBy(c)}${c.unclear ? `, ${c.unclear} unclear` : ''})` : ''} | ${c.hung} | ${c.lost} | ${c.doubled} | ${firstRow ? seconds(report.recoveryMs) : ''} |`,
    );
    firstRow = false;
  }
}
lines.push('', 'Notes of the run:', '');
for (const report of reports)
  for (const note of report.notes) lines.push(`- ${report.fault}: ${note.replaceAll('|', '\\|')}`);
const table = lines.join('\n');

if (process.argv.includes('--write')) {
  const text = readFileSync(page, 'utf8');
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) {
    console.error(`docs/RELIABILITY.md has no ${BEGIN} … ${END} section`);
    process.exit(1);
  }
  writeFileSync(page, `${text.slice(0, start + BEGIN.length)}\n\n${table}\n\n${text.slice(end)}`);
  console.log('wrote docs/RELIABILITY.md');
} else {
  console.log(table);
}

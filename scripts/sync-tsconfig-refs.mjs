#!/usr/bin/env node
// Rewrites each workspace package's tsconfig.json `references` from its workspace
// `dependencies`, so `tsc -b` builds packages in dependency order. `--check` only reports.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const check = process.argv.includes('--check');
const dirs = ['apps', 'packages'].flatMap((top) =>
  readdirSync(top)
    .map((name) => join(top, name))
    .filter((dir) => existsSync(join(dir, 'package.json'))),
);
const byName = new Map(
  dirs.map((dir) => [JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name, dir]),
);
let stale = 0;
for (const dir of dirs) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const tsconfigPath = join(dir, 'tsconfig.json');
  const tsconfig = JSON.parse(readFileSync(tsconfigPath, 'utf8'));
  const references = Object.keys(pkg.dependencies ?? {})
    .filter((dep) => byName.has(dep))
    .sort()
    .map((dep) => ({ path: join('..', '..', byName.get(dep)) }));
  if (JSON.stringify(references) === JSON.stringify(tsconfig.references ?? [])) continue;
  stale++;
  if (check) console.error(`${tsconfigPath}: references do not match workspace dependencies`);
  else writeFileSync(tsconfigPath, `${JSON.stringify({ ...tsconfig, references }, null, 2)}\n`);
}
if (check && stale) process.exit(1);

#!/usr/bin/env node
/**
 * Fails when source files import each other in a cycle. Between packages, TypeScript's project
 * references already refuse cycles (`tsc -b`); this checks the files inside each package and app,
 * type-only imports included (a type cycle still ties two modules together).
 *
 *   node scripts/check-import-cycles.mjs        (part of `pnpm lint`)
 */
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]/g;
const SIDE_EFFECT_IMPORT = /(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every non-test TypeScript file under `dir`. */
function sources(dir) {
  const files = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts'))
      files.push(path);
  }
  return files;
}

/** `./x.js` from `file` → the `.ts` file it names, when it exists. */
function target(file, specifier) {
  const base = resolve(dirname(file), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

const graph = new Map();
for (const group of ['apps', 'packages']) {
  for (const name of readdirSync(join(root, group))) {
    const src = join(root, group, name, 'src');
    if (!existsSync(src)) continue;
    for (const file of sources(src)) {
      const text = readFileSync(file, 'utf8');
      const edges = new Set();
      for (const pattern of [IMPORT, SIDE_EFFECT_IMPORT]) {
        for (const match of text.matchAll(pattern)) {
          const to = target(file, match[1]);
          if (to) edges.add(to);
        }
      }
      graph.set(file, edges);
    }
  }
}

// Tarjan's strongly connected components: every component of more than one file is a cycle.
let index = 0;
const stack = [];
const state = new Map();
const cycles = [];
function visit(node) {
  const entry = { index, low: index, onStack: true };
  state.set(node, entry);
  index++;
  stack.push(node);
  for (const next of graph.get(node) ?? []) {
    if (!graph.has(next)) continue;
    const seen = state.get(next);
    if (!seen) {
      visit(next);
      entry.low = Math.min(entry.low, state.get(next).low);
    } else if (seen.onStack) {
      entry.low = Math.min(entry.low, seen.index);
    }
  }
  if (entry.low === entry.index) {
    const component = [];
    let member;
    do {
      member = stack.pop();
      state.get(member).onStack = false;
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node).has(node)) cycles.push(component);
  }
}
for (const node of graph.keys()) if (!state.has(node)) visit(node);

if (cycles.length > 0) {
  console.error(`import cycles (${cycles.length}):`);
  for (const cycle of cycles) {
    console.error(`  ${cycle.map((file) => relative(root, file)).join(' <-> ')}`);
  }
  process.exit(1);
}
console.log(`import cycles: none in ${graph.size} source files`);

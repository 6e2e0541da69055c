#!/usr/bin/env node
// Transpiles every workspace package's src/ to dist/ with esbuild, file by file: the layout tsc
// emits (dist/index.js, dist/main.js, workers beside their callers), which each package.json
// "exports", the Dockerfile, the start scripts and the tests name. esbuild strips types without
// checking them (a few seconds for the whole workspace instead of tsc -b's two minutes), so type
// checking stays with tsc: `pnpm typecheck`, which also emits the .d.ts files the publishable
// packages ship (their `prepack` runs tsc). `pnpm build` and scripts/bootstrap.mjs run this.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `src/**\/*.test.ts`-style patterns of a tsconfig `exclude`, as a RegExp on a relative path. */
function globToRegExp(pattern) {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (pattern.startsWith('**/', i)) {
      source += '(?:.*/)?';
      i += 2;
    } else if (pattern.startsWith('**', i)) {
      source += '.*';
      i += 1;
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path) : [path];
  });
}

/**
 * The projects tsc -b builds (apps/* and packages/* with a tsconfig.json), each with the sources
 * its tsconfig compiles: `.ts` files under `rootDir`, minus its `exclude` (tests, contracts).
 */
export function workspaceProjects(root = ROOT) {
  const projects = [];
  for (const top of ['apps', 'packages']) {
    for (const name of readdirSync(join(root, top)).sort()) {
      const dir = join(root, top, name);
      const tsconfigFile = join(dir, 'tsconfig.json');
      if (!existsSync(tsconfigFile)) continue;
      const tsconfig = JSON.parse(readFileSync(tsconfigFile, 'utf8'));
      const rootDir = tsconfig.compilerOptions?.rootDir ?? 'src';
      const outDir = tsconfig.compilerOptions?.outDir ?? 'dist';
      const excluded = (tsconfig.exclude ?? []).map(globToRegExp);
      const sources = walk(join(dir, rootDir)).filter((file) => {
        const path = relative(dir, file).split(sep).join('/');
        return (
          file.endsWith('.ts') && !file.endsWith('.d.ts') && !excluded.some((re) => re.test(path))
        );
      });
      projects.push({ dir, srcDir: join(dir, rootDir), outDir: join(dir, outDir), sources });
    }
  }
  return projects;
}

/**
 * Transpiles the whole workspace. Files whose output did not change are not rewritten, so their
 * times stay (tsc -b and anything watching dist/ see no change). Returns what it did.
 */
export async function build(root = ROOT) {
  const { build: esbuild } = await import('esbuild');
  const projects = workspaceProjects(root);
  const entryPoints = projects.flatMap((project) =>
    project.sources.map((file) => ({
      in: file,
      out: join(project.outDir, relative(project.srcDir, file)).replace(/\.ts$/, ''),
    })),
  );
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints,
    outdir: root,
    bundle: false,
    platform: 'node',
    format: 'esm',
    // tsconfig.base.json's target; each file's own tsconfig.json is read for the rest
    // (verbatimModuleSyntax keeps imports exactly as tsc would).
    target: 'es2023',
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    logLevel: 'silent',
  });
  let written = 0;
  for (const file of result.outputFiles) {
    const current = existsSync(file.path) ? readFileSync(file.path) : undefined;
    if (current && Buffer.compare(current, file.contents) === 0) continue;
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, file.contents);
    if (file.path.endsWith('.js')) written++; // a source's .js.map is counted with its .js
  }
  // `written`: sources whose JavaScript changed (or was missing).
  return { projects: projects.length, files: entryPoints.length, written };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  const { projects, files, written } = await build();
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `[build] ${files} files of ${projects} packages transpiled to dist/ in ${seconds} s (${written} written)\n`,
  );
}

/**
 * The client SDK and the packages it depends on are publishable. Each is packed
 * with `pnpm pack` (what `pnpm publish` uploads) and the tarball is checked as a user installing
 * it would see it: a public name, the MIT licence text, a README, the built code and its types
 * (`pnpm build` transpiles without types; each package's `prepack` runs tsc for them), and
 * dependencies on published versions rather than `workspace:` links.
 * Releases: each carries its CHANGELOG.md, and changesets versions exactly these packages,
 * together (`.changeset/config.json`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const PACKAGES = ['client', 'protocol', 'node-client'];

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  exports: Record<string, Record<string, string> | string>;
  dependencies?: Record<string, string>;
}

function pack(dir: string): { files: string[]; manifest: Manifest; licence: string } {
  const destination = tempDir('pack');
  const out = execFileSync('pnpm', ['pack', '--pack-destination', destination, '--json'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0' },
  });
  // Packing runs the package's `prepack` (tsc -b: the .d.ts files), whose banner comes first.
  const { filename, files } = JSON.parse(out.slice(out.search(/^\{/m))) as {
    filename: string;
    files: { path: string }[];
  };
  const tarball = join(destination, filename.split('/').pop()!);
  const read = (path: string) =>
    execFileSync('tar', ['-xzOf', tarball, `package/${path}`], { encoding: 'utf8' });
  return {
    files: files.map((f) => f.path),
    manifest: JSON.parse(read('package.json')) as Manifest,
    licence: read('LICENSE'),
  };
}

describe('publishable packages', () => {
  it.each(PACKAGES)('@agent-backend/%s packs with its README, LICENSE, code and types', (name) => {
    requireBuild(`packages/${name}/dist/index.js`);
    const { files, manifest, licence } = pack(join(REPO_ROOT, 'packages', name));

    expect(manifest.name).toBe(`@agent-backend/${name}`);
    expect(manifest.private).toBeUndefined();
    expect(manifest.license).toBe('MIT');
    expect(licence).toBe(readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8'));
    expect(licence).toContain('Copyright (c) 2026 the agent-backend authors');
    expect(files).toEqual(
      expect.arrayContaining([
        'README.md',
        'LICENSE',
        'CHANGELOG.md',
        'dist/index.js',
        'dist/index.d.ts',
      ]),
    );
    expect(files.filter((f) => f.includes('.test.') || f.startsWith('src/'))).toEqual([]);
    // Every file `exports` names is in the tarball.
    for (const entry of Object.values(manifest.exports)) {
      for (const target of typeof entry === 'string' ? [entry] : Object.values(entry)) {
        if (target.endsWith('package.json')) continue;
        expect(files, target).toContain(target.replace(/^\.\//, ''));
      }
    }
    for (const [dependency, range] of Object.entries(manifest.dependencies ?? {})) {
      expect(range, dependency).not.toMatch(/^workspace:/);
    }
  });

  it('are the packages changesets releases, with one version number', () => {
    const publishable = readdirSync(join(REPO_ROOT, 'packages'))
      .map((dir) => join(REPO_ROOT, 'packages', dir, 'package.json'))
      .filter((path) => {
        try {
          return !(JSON.parse(readFileSync(path, 'utf8')) as Manifest).private;
        } catch {
          return false;
        }
      })
      .map((path) => (JSON.parse(readFileSync(path, 'utf8')) as Manifest).name);
    expect(publishable.sort()).toEqual(PACKAGES.map((name) => `@agent-backend/${name}`).sort());
    const config = JSON.parse(
      readFileSync(join(REPO_ROOT, '.changeset', 'config.json'), 'utf8'),
    ) as { fixed: string[][]; access: string };
    expect(config.access).toBe('public');
    expect(config.fixed.map((group) => [...group].sort())).toEqual([publishable.sort()]);
  });
});

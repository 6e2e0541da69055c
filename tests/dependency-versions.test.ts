/**
 * One version of each shared library: the dependency tree as `pnpm install` lays it out. Libraries whose objects cross
 * package boundaries (an ioredis connection handed to BullMQ, an express app and its routers,
 * the openai client) are installed once; a dependency declared by several workspace manifests
 * has one range everywhere; the pretty log printer is not a production dependency.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..');

type Manifest = Partial<
  Record<
    'dependencies' | 'devDependencies' | 'optionalDependencies' | 'peerDependencies',
    Record<string, string>
  >
>;

const manifests: Array<{ path: string; manifest: Manifest }> = [
  'package.json',
  ...['apps', 'packages'].flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .map((name) => `${dir}/${name}/package.json`)
      .filter((path) => existsSync(join(ROOT, path))),
  ),
].map((path) => ({
  path,
  manifest: JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Manifest,
}));

const lock = parse(readFileSync(join(ROOT, 'pnpm-lock.yaml'), 'utf8')) as {
  packages: Record<string, unknown>;
};

/** Installed versions of `name` in pnpm-lock.yaml (its `packages:` keys are `name@version`). */
function lockedVersions(name: string): string[] {
  return Object.keys(lock.packages)
    .filter((key) => key.startsWith(`${name}@`))
    .map((key) => key.slice(name.length + 1));
}

describe('dependency tree', () => {
  // semver crosses no boundary, but a second copy (BullMQ pins its own) costs every process that
  // runs jobs 46 more modules (docs/BENCHMARKS.md, "Footprint"; the override in pnpm-workspace.yaml).
  it.each(['express', 'ioredis', 'bullmq', 'openai', 'vitest', 'semver'])(
    'installs one %s',
    (name) => {
      expect(lockedVersions(name)).toHaveLength(1);
    },
  );

  it('declares a shared dependency with the same range in every manifest', () => {
    const ranges = new Map<string, Map<string, string[]>>();
    for (const { path, manifest } of manifests) {
      for (const field of ['dependencies', 'devDependencies', 'optionalDependencies'] as const) {
        for (const [name, range] of Object.entries(manifest[field] ?? {})) {
          if (range.startsWith('workspace:')) continue;
          const byRange = ranges.get(name) ?? new Map<string, string[]>();
          byRange.set(range, [...(byRange.get(range) ?? []), path]);
          ranges.set(name, byRange);
        }
      }
    }
    const differing = [...ranges]
      .filter(([, byRange]) => byRange.size > 1)
      .map(([name, byRange]) => `${name}: ${JSON.stringify(Object.fromEntries(byRange))}`);
    expect(differing).toEqual([]);
  });

  it('keeps pino-pretty out of production dependencies', () => {
    const production = manifests
      .filter(({ manifest }) => manifest.dependencies?.['pino-pretty'] !== undefined)
      .map(({ path }) => path);
    expect(production).toEqual([]);
  });
});

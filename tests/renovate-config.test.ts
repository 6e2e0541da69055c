/**
 * Dependency updates: renovate.json groups dependency updates by ecosystem. Each group is named once,
 * and each of its package patterns still names a dependency of some workspace manifest, so a
 * group does not silently go stale when a library is replaced (e.g. cron-parser by croner).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

interface PackageRule {
  groupName?: string;
  matchPackageNames?: string[];
}

const config = JSON.parse(readFileSync(join(ROOT, 'renovate.json'), 'utf8')) as {
  packageRules: PackageRule[];
};

/** Every dependency name of the workspace, plus the package manager `packageManager` pins. */
function dependencyNames(): Set<string> {
  const names = new Set<string>();
  const paths = [
    'package.json',
    ...['apps', 'packages'].flatMap((dir) =>
      readdirSync(join(ROOT, dir))
        .map((name) => `${dir}/${name}/package.json`)
        .filter((path) => existsSync(join(ROOT, path))),
    ),
  ];
  for (const path of paths) {
    const manifest = JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Record<string, unknown>;
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies']) {
      for (const name of Object.keys((manifest[field] as Record<string, string>) ?? {}))
        names.add(name);
    }
    if (typeof manifest.packageManager === 'string')
      names.add(manifest.packageManager.split('@')[0]!);
  }
  return names;
}

/** Renovate's package patterns as used here: exact names, or `scope/**` for a whole scope. */
const matches = (pattern: string, name: string) =>
  pattern.endsWith('/**') ? name.startsWith(pattern.slice(0, -2)) : name === pattern;

describe('renovate.json', () => {
  const groups = config.packageRules.filter((rule) => rule.groupName !== undefined);

  it('groups updates by ecosystem, each group named once', () => {
    const names = groups.map((rule) => rule.groupName);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'types',
        'lint and format',
        'test tooling',
        'OpenTelemetry',
        'MCP',
        'Redis and BullMQ',
        'LangChain',
      ]),
    );
  });

  it('names only packages the workspace depends on', () => {
    const dependencies = [...dependencyNames()];
    const stale = groups.flatMap((rule) =>
      (rule.matchPackageNames ?? [])
        .filter((pattern) => !dependencies.some((name) => matches(pattern, name)))
        .map((pattern) => `${rule.groupName}: ${pattern}`),
    );
    expect(stale).toEqual([]);
  });
});
